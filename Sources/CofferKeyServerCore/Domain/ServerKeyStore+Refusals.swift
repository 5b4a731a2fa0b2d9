#if Server
import Coffer
import Foundation

/// Refused operator calls, in the audit chain (operator trial 4: "the
/// audit records only successes"). At most ``RefusalAudit/perMinute``
/// entries a minute per process, so that a flood of made-up tokens cannot
/// grow the chain without bound; the refusals past that are counted, and
/// the next entry says how many were not written one by one.
extension ServerKeyStore {
    /// Appends `refused` to the audit chain: who (`operator:NAME`, or
    /// `operator:unknown` for a token the server does not know), the
    /// problem's code, the method and the route's pattern; never the token.
    /// A failure to write it is returned, not thrown: the refusal stands
    /// either way.
    @discardableResult
    package func auditRefusal(actor: String, code: String, method: String, route: String) async -> (any Error)? {
        let now = self.now()
        guard let skipped = refusals.admit(now: now) else { return nil }
        var record = AuditEntry.Record(actor: actor, action: "refused")
        record.detail =
            "\(code) \(method) \(route)"
            + (skipped > 0
                ? " (and \(skipped) refused call\(skipped == 1 ? "" : "s") before it, not written one by one)" : "")
        do {
            try await rows.appendAudit([record], now: now)
            return nil
        } catch {
            return error
        }
    }
}

/// How many refusals this minute were written, and how many were not.
final class RefusalAudit: Sendable {
    static let perMinute = 60
    private let state = Locked<(minute: Int64, written: Int, skipped: Int)>((0, 0, 0))

    /// The number of refusals skipped before this one when it may be
    /// written (then reset), nil when it is one too many this minute.
    func admit(now: Int64) -> Int? {
        state.withLock { state in
            let minute = now / 60
            if minute != state.minute { state = (minute, 0, state.skipped) }
            guard state.written < Self.perMinute else {
                state.skipped += 1
                return nil
            }
            state.written += 1
            defer { state.skipped = 0 }
            return state.skipped
        }
    }
}
#endif
