#include "CCofferSystem.h"
#include <sys/resource.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

int coffer_disable_core_dumps(void) {
    struct rlimit none = {0, 0};
    int result = setrlimit(RLIMIT_CORE, &none);
#if defined(__linux__)
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) result = -1;
#endif
    return result;
}

int coffer_is_dumpable(void) {
#if defined(__linux__)
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
#else
    return -1;
#endif
}
