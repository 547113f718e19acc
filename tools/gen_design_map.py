"""Generate the mechanical half of ``cuda_core/DESIGN.md``'s module map from the code.

For every module of the package (each ``.pyx`` with the ``.pxi`` files it includes, each ``.py``,
and each ``.pxd`` without a ``.pyx``), one row: what it defines (its ``__all__``, else its public
top-level classes and functions), what its ``.pxd`` exports at C level, and which of the
package's modules it cimports and imports (imports inside functions included: those are the
layering's exceptions). The table goes between two marker lines of DESIGN.md; the prose that
the code cannot say (what a module holds, ownership, layering, policies) stays hand-written
around it. ``tests/test_design_map.py`` fails when the table and the code disagree, and when a
module has no line of prose in the hand-written table (or that table names a file that is gone).

    python tools/gen_design_map.py          # rewrite the table in DESIGN.md
    python tools/gen_design_map.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import ast
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PKG = os.path.join(ROOT, "cuda_core")
DESIGN = os.path.join(PKG, "DESIGN.md")
MANY = 24  # a longer __all__ (the package's, a namespace's) is shown as a count
BEGIN = "<!-- BEGIN GENERATED module map (tools/gen_design_map.py) -->\n"
END = "<!-- END GENERATED module map -->\n"

_FROM = r"^\s*(?:from\s+(cuda_core(?:\.[\w.]+)?)\s+"
_CIMPORT = re.compile(_FROM + r"cimport\s+(.+)|cimport\s+(cuda_core\.[\w.]+))", re.M)
_IMPORT = re.compile(_FROM + r"import\s+(.+)|import\s+(cuda_core\.[\w.]+))", re.M)
_INCLUDE = re.compile(r'^include\s+"([^"]+)"', re.M)
_ALL = re.compile(r"^__all__\s*=\s*(\[[^\]]*\]|\([^)]*\))", re.M | re.S)
_PYX_DEF = re.compile(
    r"^(?:cdef\s+class|class|def|cpdef\s+[\w\s.*\[\]]*?)\s*\b([A-Za-z]\w*)\s*[(:]", re.M)
_PXD_CLASS = re.compile(r"^(?:cdef\s+)?(?:cdef\s+)?class\s+(\w+)|^cdef\s+class\s+(\w+)", re.M)
_PXD_FUNC = re.compile(r"^(?:cdef|cpdef)\s+(?!class\b|extern\b|struct\b|enum\b|packed\b)"
                       r"(?:inline\s+)?[\w.*\[\], ]*?\b(\w+)\s*\(", re.M)
_PXD_TYPE = re.compile(
    r"^(?:cdef\s+(?:struct|enum|cppclass)|ctypedef\s+(?:struct|enum)?\s*[\w\s*]*?)\s+(\w+)\s*:",
    re.M)
_PXD_CONST = re.compile(r"^(?:cdef|DEF)\s+(?!class\b|extern\b|struct\b|enum\b|inline\b|cppclass\b)"
                        r"[\w.*]+(?:\s+[\w.*]+)*?\s+([A-Z_][A-Z0-9_]*)\s*(?:=|$|\[)", re.M)


def modules() -> dict[str, dict[str, str]]:
    """Each module's files by kind: {"cuda_core/x": {"pyx": path, "pxd": path, "py": path}}."""
    out: dict[str, dict[str, str]] = {}
    for dirpath, dirnames, files in os.walk(PKG):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for f in sorted(files):
            base, ext = os.path.splitext(f)
            if ext not in (".pyx", ".pxd", ".py"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, base), PKG).replace(os.sep, "/")
            out.setdefault(rel, {})[ext[1:]] = os.path.join(dirpath, f)
    return out


def _module_of(name: str, known: set[str]) -> str | None:
    """``cuda_core.a.b`` (a module or a name in one) as the module key ``a/b``, or None."""
    parts = name.split(".")[1:]
    while parts:
        key = "/".join(parts)
        if key in known or key + "/__init__" in known:
            return key if key in known else key + "/__init__"
        parts = parts[:-1]
    return None


def _py_imports(text: str) -> list[tuple[str | None, str | None, str | None]]:
    """A .py file's imports of the package, from its syntax tree (docstrings and comments
    that show an import are not imports), as the regular expressions' groups."""
    out: list[tuple[str | None, str | None, str | None]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.split(".")[0] == "cuda_core":
            out.append((node.module, ", ".join(a.name for a in node.names), None))
        elif isinstance(node, ast.Import):
            out += [(None, None, a.name) for a in node.names if a.name.startswith("cuda_core.")]
    return out


def _deps(text: str, pattern: re.Pattern | None, known: set[str]) -> set[str]:
    found = set()
    groups = _py_imports(text) if pattern is None else \
        [(m.group(1), m.group(2), m.group(3)) for m in pattern.finditer(text)]
    for base, names, whole in groups:
        if whole:
            key = _module_of(whole, known)
            if key:
                found.add(key)
            continue
        # "from cuda_core import x" may name submodules; "from cuda_core.a import x" a module's
        # names, or its submodules.
        cleaned = re.sub(r"[()\\]", " ", names.split("#")[0])
        subs = [n.split(" as ")[0].strip() for n in cleaned.split(",") if n.strip()]
        hit = False
        for n in subs:
            key = _module_of(f"{base}.{n}", known)
            if key and key != _module_of(base, known) and key.split("/")[-1] == n.split(".")[-1]:
                found.add(key)
                hit = True
        if not hit:
            key = _module_of(base, known)
            if key:
                found.add(key)
    return found


def _defined(path: str) -> list[str]:
    text = open(path, encoding="utf-8").read()
    m = _ALL.search(text)
    if m:
        try:
            names = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError):
            names = None
        if names:
            return sorted(names)
    if path.endswith(".py"):
        tree = ast.parse(text)
        return sorted(n.name for n in tree.body
                      if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and not n.name.startswith("_"))
    return sorted({n for n in _PYX_DEF.findall(text) if not n.startswith("_")})


# The package's own C functions are declared in `cdef extern from *` blocks (a header's are
# not ours to list); names starting with two underscores there are compiler built-ins.
_EXTERN_BLOCK = re.compile(r'^cdef\s+extern\s+from\s+\*[^\n]*:\n((?:[ \t]+[^\n]*\n|\n)*)',
                           re.M)
_EXTERN_FUNC = re.compile(r'^ {4}(?![ \t]|ctypedef\b|cdef\b)[\w .*]*?\b(\w+)\s*(?:"[^"]*")?\s*\(',
                          re.M)


def _pxd_exports(path: str) -> list[str]:
    text = open(path, encoding="utf-8").read()
    # Declarations at column 0, and the functions of `cdef extern` blocks (one level in):
    # members of a class or struct are indented further.
    names = {a or b for a, b in _PXD_CLASS.findall(text)}
    for block in _EXTERN_BLOCK.findall(text):
        block = re.sub(r'"""(?:.|\n)*?"""', "", block)  # the C source the block carries
        names |= {n for n in _EXTERN_FUNC.findall(block) if not n.startswith("__")}
        names |= set(re.findall(r"^ {4}(?:cppclass|struct)\s+(\w+)", block, re.M))
    names |= set(_PXD_FUNC.findall(text))
    names |= set(_PXD_TYPE.findall(text))
    names |= set(_PXD_CONST.findall(text))
    return sorted(n for n in names if n)


def rows() -> list[tuple[str, str, str, str, str]]:
    mods = modules()
    known = set(mods)
    out = []
    for key in sorted(mods, key=lambda k: (k.count("/"), k)):
        files = mods[key]
        src = files.get("pyx") or files.get("py")
        texts = []
        shown = []
        for kind in ("pyx", "py", "pxd"):
            if kind in files:
                shown.append(f"{key}.{kind}")
                texts.append(open(files[kind], encoding="utf-8").read())
        if "pyx" in files:
            for inc in _INCLUDE.findall(texts[0]):
                inc_path = os.path.join(os.path.dirname(files["pyx"]), inc)
                shown.append(os.path.relpath(inc_path, PKG).replace(os.sep, "/"))
                texts.append(open(inc_path, encoding="utf-8").read())
        text = "\n".join(texts)
        cimports = sorted(_deps(text, _CIMPORT, known) - {key})
        py_only = "pyx" not in files and "py" in files
        imports = sorted(_deps(text, None if py_only else _IMPORT, known) - {key}
                         - set(cimports))
        defines = _defined(src) if src else []
        exports = _pxd_exports(files["pxd"]) if "pxd" in files else []

        def cell(names, modules=False):
            if modules:  # a package by its name, not its __init__
                names = [n.removesuffix("/__init__").replace("/", ".") for n in names]
            return ", ".join(f"`{n}`" for n in names)

        defined = (f"{len(defines)} names (`__all__`)" if len(defines) > MANY
                   else cell(defines))
        out.append((", ".join(f"`{s}`" for s in shown), defined, cell(exports),
                    cell(cimports, True), cell(imports, True)))
    return out


def table() -> str:
    lines = ["| Module | Defines (`__all__`, else its public names) | `.pxd` exports | cimports "
             "| imports (also inside functions) |\n", "|---|---|---|---|---|\n"]
    lines += [f"| {' | '.join(r)} |\n" for r in rows()]
    return "".join(lines)


def render(design: str) -> str:
    start, end = design.index(BEGIN) + len(BEGIN), design.index(END)
    return design[:start] + table() + design[end:]


def main(argv: list[str]) -> int:
    design = open(DESIGN, encoding="utf-8").read()
    new = render(design)
    if "--check" in argv:
        if new != design:
            print("cuda_core/DESIGN.md: the generated module map is out of date; run "
                  "python tools/gen_design_map.py")
            return 1
        return 0
    if new != design:
        with open(DESIGN, "w", encoding="utf-8") as f:
            f.write(new)
        print("rewrote the module map in cuda_core/DESIGN.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
