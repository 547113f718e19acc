/* A native backtrace on a fatal signal, for a process that crashes in the driver where the GPU
 * machine has no debugger: LD_PRELOAD this library, and on SIGSEGV, SIGBUS or SIGABRT it
 * writes the C stack (backtrace_symbols_fd) to stderr, then lets the signal kill the process as
 * before (Python's faulthandler, enabled later, chains to it). Offsets into cuda_core's
 * stripped extension modules resolve with addr2line against the unstripped copies in the
 * build tree (same BuildID).
 *
 * Build here (the GPU machine may lack a compiler), into the staged folder:
 *   gcc -shared -fPIC -O1 -o .gpu/segv_backtrace.so tools/gpu/segv_backtrace.c
 */
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void on_fatal(int sig, siginfo_t* info, void* context) {
    void* frames[64];
    int n = backtrace(frames, 64);
    (void)info;
    (void)context;
    write(2, "\n== native backtrace ==\n", 24);
    backtrace_symbols_fd(frames, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_fatal;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &action, 0);
    sigaction(SIGBUS, &action, 0);
    sigaction(SIGABRT, &action, 0);
}
