#if defined(__linux__)
#define _GNU_SOURCE  /* sync_file_range */
#endif
#include "CCofferSystem.h"
#include <sys/resource.h>
#if defined(__linux__)
#include <fcntl.h>
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

int coffer_start_writeback(int descriptor, long long offset, long long count) {
#if defined(__linux__)
    return sync_file_range(descriptor, offset, count, SYNC_FILE_RANGE_WRITE);
#else
    (void)descriptor; (void)offset; (void)count;
    return 0;
#endif
}
