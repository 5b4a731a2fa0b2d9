import CCofferSystem

/// Process-wide protection of key material in memory.
public enum ProcessHardening {
    /// No core file will hold this process's memory (keys, passphrases,
    /// plaintext): the core size limit becomes zero and, on Linux, the
    /// process is marked not dumpable (PR_SET_DUMPABLE 0), which also
    /// keeps other processes of the same user from attaching to it or
    /// reading /proc/PID/mem. The `coffer` tool does this first thing; a
    /// server or app holding keys should too.
    /// Returns false when the platform refused.
    @discardableResult
    public static func disableCoreDumps() -> Bool { coffer_disable_core_dumps() == 0 }

    /// False once `disableCoreDumps` took effect; nil where the platform cannot tell.
    public static var isDumpable: Bool? {
        let value = coffer_is_dumpable()
        return value < 0 ? nil : value != 0
    }
}
