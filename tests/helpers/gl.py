"""A headless OpenGL context through EGL, over ctypes, for the graphics-interop tests.

Only what the tests need: an EGL display on the first EGL device (or the default display), an
OpenGL context made current without a window, buffer objects and 2-D textures, and reading
them back through GL. ``open_context()`` raises ``GLUnavailable`` with the reason when the
machine has no EGL or OpenGL library, no EGL device or no usable configuration.
"""

import ctypes
import ctypes.util
import threading

# EGL constants (EGL 1.5 and EGL_EXT_platform_device).
EGL_NONE = 0x3038
EGL_SURFACE_TYPE = 0x3033
EGL_PBUFFER_BIT = 0x0001
EGL_RENDERABLE_TYPE = 0x3040
EGL_OPENGL_BIT = 0x0008
EGL_WIDTH = 0x3057
EGL_HEIGHT = 0x3056
EGL_OPENGL_API = 0x30A2
EGL_PLATFORM_DEVICE_EXT = 0x313F

# OpenGL constants.
GL_ARRAY_BUFFER = 0x8892
GL_DYNAMIC_DRAW = 0x88E8
GL_TEXTURE_2D = 0x0DE1
GL_RGBA = 0x1908
GL_RGBA8 = 0x8058
GL_R32F = 0x822E
GL_RED = 0x1903
GL_FLOAT = 0x1406
GL_UNSIGNED_BYTE = 0x1401
GL_TEXTURE_MIN_FILTER = 0x2801
GL_TEXTURE_MAG_FILTER = 0x2800
GL_NEAREST = 0x2600
GL_PACK_ALIGNMENT = 0x0D05
GL_UNPACK_ALIGNMENT = 0x0CF5
GL_NO_ERROR = 0


class GLUnavailable(RuntimeError):
    """No headless OpenGL on this machine; the message says what is missing."""


def _load(names):
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    found = ctypes.util.find_library(names[0].split(".")[0][3:])
    if found:
        return ctypes.CDLL(found)
    raise GLUnavailable(f"none of {', '.join(names)} can be loaded")


class GLContext:
    """A current headless OpenGL context on the calling thread (``with`` releases it)."""

    def __init__(self):
        self._egl = egl = _load(["libEGL.so.1", "libEGL.so"])
        gl_lib = _load(["libOpenGL.so.0", "libOpenGL.so", "libGL.so.1"])
        egl.eglGetProcAddress.restype = ctypes.c_void_p
        egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]
        egl.eglGetDisplay.restype = ctypes.c_void_p
        egl.eglGetDisplay.argtypes = [ctypes.c_void_p]
        egl.eglInitialize.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
                                      ctypes.POINTER(ctypes.c_int)]
        egl.eglChooseConfig.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int),
                                        ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                                        ctypes.POINTER(ctypes.c_int)]
        egl.eglCreatePbufferSurface.restype = ctypes.c_void_p
        egl.eglCreatePbufferSurface.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                ctypes.POINTER(ctypes.c_int)]
        egl.eglCreateContext.restype = ctypes.c_void_p
        egl.eglCreateContext.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.POINTER(ctypes.c_int)]
        egl.eglMakeCurrent.argtypes = [ctypes.c_void_p] * 4
        egl.eglDestroyContext.argtypes = [ctypes.c_void_p] * 2
        egl.eglDestroySurface.argtypes = [ctypes.c_void_p] * 2
        egl.eglTerminate.argtypes = [ctypes.c_void_p]
        egl.eglGetError.restype = ctypes.c_int

        self._display = self._open_display()
        major, minor = ctypes.c_int(), ctypes.c_int()
        if not egl.eglInitialize(self._display, ctypes.byref(major), ctypes.byref(minor)):
            raise GLUnavailable(f"eglInitialize failed (EGL error 0x{egl.eglGetError():x})")
        if not egl.eglBindAPI(EGL_OPENGL_API):
            raise GLUnavailable("eglBindAPI(EGL_OPENGL_API) failed: no desktop OpenGL")
        attrs = (ctypes.c_int * 5)(EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE,
                                   EGL_OPENGL_BIT, EGL_NONE)
        config, count = ctypes.c_void_p(), ctypes.c_int()
        if not egl.eglChooseConfig(self._display, attrs, ctypes.byref(config), 1,
                                   ctypes.byref(count)) or count.value < 1:
            raise GLUnavailable("no EGL configuration with OpenGL and a pbuffer")
        size = (ctypes.c_int * 5)(EGL_WIDTH, 1, EGL_HEIGHT, 1, EGL_NONE)
        self._surface = egl.eglCreatePbufferSurface(self._display, config, size)
        self._context = egl.eglCreateContext(self._display, config, None, None)
        if not self._surface or not self._context:
            raise GLUnavailable(f"EGL context creation failed (0x{egl.eglGetError():x})")
        if not egl.eglMakeCurrent(self._display, self._surface, self._surface, self._context):
            raise GLUnavailable(f"eglMakeCurrent failed (0x{egl.eglGetError():x})")
        self.gl = _GL(egl, gl_lib)
        self.thread = threading.get_ident()
        self.vendor = self.gl.string(0x1F00)    # GL_VENDOR
        self.renderer = self.gl.string(0x1F01)  # GL_RENDERER

    def _open_display(self):
        egl = self._egl
        query = egl.eglGetProcAddress(b"eglQueryDevicesEXT")
        platform = egl.eglGetProcAddress(b"eglGetPlatformDisplayEXT")
        if query and platform:
            query_fn = ctypes.CFUNCTYPE(ctypes.c_uint, ctypes.c_int,
                                        ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.POINTER(ctypes.c_int))(query)
            platform_fn = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p,
                                           ctypes.POINTER(ctypes.c_int))(platform)
            devices = (ctypes.c_void_p * 8)()
            n = ctypes.c_int()
            if query_fn(8, devices, ctypes.byref(n)) and n.value > 0:
                display = platform_fn(EGL_PLATFORM_DEVICE_EXT, devices[0], None)
                if display:
                    return display
        display = egl.eglGetDisplay(None)
        if not display:
            raise GLUnavailable("no EGL device and no default EGL display")
        return display

    def close(self):
        egl = self._egl
        egl.eglMakeCurrent(self._display, None, None, None)
        if self._context:
            egl.eglDestroyContext(self._display, self._context)
        if self._surface:
            egl.eglDestroySurface(self._display, self._surface)
        self._context = self._surface = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class _GL:
    """The few OpenGL entry points the tests call, each checked with glGetError."""

    def __init__(self, egl, lib):
        def fn(name, restype, *argtypes):
            addr = egl.eglGetProcAddress(name.encode())
            if not addr:
                try:
                    addr = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                except AttributeError:
                    raise GLUnavailable(f"OpenGL has no {name}") from None
            return ctypes.CFUNCTYPE(restype, *argtypes)(addr)

        u, i, p, s = ctypes.c_uint, ctypes.c_int, ctypes.c_void_p, ctypes.c_ssize_t
        self.glGetError = fn("glGetError", u)
        self.glGetString = fn("glGetString", ctypes.c_char_p, u)
        self.glGenBuffers = fn("glGenBuffers", None, i, ctypes.POINTER(u))
        self.glDeleteBuffers = fn("glDeleteBuffers", None, i, ctypes.POINTER(u))
        self.glBindBuffer = fn("glBindBuffer", None, u, u)
        self.glBufferData = fn("glBufferData", None, u, s, p, u)
        self.glGetBufferSubData = fn("glGetBufferSubData", None, u, s, s, p)
        self.glGenTextures = fn("glGenTextures", None, i, ctypes.POINTER(u))
        self.glDeleteTextures = fn("glDeleteTextures", None, i, ctypes.POINTER(u))
        self.glBindTexture = fn("glBindTexture", None, u, u)
        self.glTexParameteri = fn("glTexParameteri", None, u, u, i)
        self.glPixelStorei = fn("glPixelStorei", None, u, i)
        self.glTexImage2D = fn("glTexImage2D", None, u, i, i, i, i, i, u, u, p)
        self.glGetTexImage = fn("glGetTexImage", None, u, i, u, u, p)
        self.glFinish = fn("glFinish", None)

    def check(self, what):
        err = self.glGetError()
        if err != GL_NO_ERROR:
            raise RuntimeError(f"OpenGL error 0x{err:x} after {what}")

    def string(self, name):
        value = self.glGetString(name)
        return value.decode() if value else ""

    def create_buffer(self, data):
        """A new buffer object holding ``data`` (bytes); returns its name."""
        name = ctypes.c_uint()
        self.glGenBuffers(1, ctypes.byref(name))
        self.glBindBuffer(GL_ARRAY_BUFFER, name.value)
        self.glBufferData(GL_ARRAY_BUFFER, len(data), data, GL_DYNAMIC_DRAW)
        self.glBindBuffer(GL_ARRAY_BUFFER, 0)
        self.check("creating a buffer")
        return name.value

    def read_buffer(self, name, nbytes):
        out = ctypes.create_string_buffer(nbytes)
        self.glBindBuffer(GL_ARRAY_BUFFER, name)
        self.glGetBufferSubData(GL_ARRAY_BUFFER, 0, nbytes, out)
        self.glBindBuffer(GL_ARRAY_BUFFER, 0)
        self.check("reading a buffer")
        return out.raw

    def delete_buffer(self, name):
        self.glDeleteBuffers(1, ctypes.byref(ctypes.c_uint(name)))

    def create_texture_rgba8(self, width, height, data):
        """A new GL_TEXTURE_2D of RGBA8 texels holding ``data``; returns its name."""
        name = ctypes.c_uint()
        self.glGenTextures(1, ctypes.byref(name))
        self.glBindTexture(GL_TEXTURE_2D, name.value)
        self.glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST)
        self.glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST)
        self.glPixelStorei(GL_UNPACK_ALIGNMENT, 1)
        self.glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA,
                          GL_UNSIGNED_BYTE, data)
        self.glBindTexture(GL_TEXTURE_2D, 0)
        self.check("creating a texture")
        return name.value

    def read_texture_rgba8(self, name, width, height):
        out = ctypes.create_string_buffer(width * height * 4)
        self.glBindTexture(GL_TEXTURE_2D, name)
        self.glPixelStorei(GL_PACK_ALIGNMENT, 1)
        self.glGetTexImage(GL_TEXTURE_2D, 0, GL_RGBA, GL_UNSIGNED_BYTE, out)
        self.glBindTexture(GL_TEXTURE_2D, 0)
        self.check("reading a texture")
        return out.raw

    def delete_texture(self, name):
        self.glDeleteTextures(1, ctypes.byref(ctypes.c_uint(name)))


def open_context():
    """A current headless GL context, or GLUnavailable with the reason."""
    try:
        return GLContext()
    except GLUnavailable:
        raise
    except OSError as exc:
        raise GLUnavailable(str(exc)) from None
