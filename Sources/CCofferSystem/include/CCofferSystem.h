#ifndef COFFER_SYSTEM_H
#define COFFER_SYSTEM_H

/// Marks the process as not dumpable (no core file, no ptrace or
/// /proc/PID/mem by other processes of the same user) where the platform
/// can, and sets the core size limit to zero. Returns 0 on success.
int coffer_disable_core_dumps(void);

/// 1 when the process is marked not dumpable, 0 when it is, -1 when the
/// platform cannot tell.
int coffer_is_dumpable(void);

/// Asks the kernel to start writing `count` bytes at `offset` of a file
/// to disk without waiting (Linux's sync_file_range with
/// SYNC_FILE_RANGE_WRITE), so that a later fsync finds little left to do.
/// A no-op returning 0 elsewhere.
int coffer_start_writeback(int descriptor, long long offset, long long count);

#include "coffer_chacha.h"

#endif
