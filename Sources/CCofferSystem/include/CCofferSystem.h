#ifndef COFFER_SYSTEM_H
#define COFFER_SYSTEM_H

/// Marks the process as not dumpable (no core file, no ptrace or
/// /proc/PID/mem by other processes of the same user) where the platform
/// can, and sets the core size limit to zero. Returns 0 on success.
int coffer_disable_core_dumps(void);

/// 1 when the process is marked not dumpable, 0 when it is, -1 when the
/// platform cannot tell.
int coffer_is_dumpable(void);

#include "coffer_chacha.h"

#endif
