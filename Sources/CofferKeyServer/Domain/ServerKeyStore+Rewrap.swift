#if Server
import Coffer
import Foundation

/// KEK rotation: after a new primary key is added to the KEK ring, every
/// stored key is sealed again under it, in batches, while the server
/// serves. Each batch is one transaction that rewrites a row only if it is
/// still as read, so the job can be stopped (even by `kill -9`) and run
/// again, by any process, and ends when no row is left under another key.
extension ServerKeyStore {
    /// Rows still sealed under a KEK key other than the primary.
    public func rowsToRewrap() async throws -> Int {
        let primary = Self.keyIDBytes(kek.primaryID)
        return try await rows.wrappedCounts().filter { $0.key != primary }.values.reduce(0, +)
    }

    /// How many stored keys each KEK key sealed, by the KEK key's id, and
    /// how many rows are too short to name one (`coffer-server kek list`).
    /// A row whose header names a key the ring lacks counts under that id.
    public func rowsByKEKKey() async throws -> (byKey: [UInt32: Int], malformed: Int) {
        var counts: [UInt32: Int] = [:]
        var malformed = 0
        for (keyID, count) in try await rows.wrappedCounts() {
            guard keyID.count == 4 else {
                malformed += count
                continue
            }
            counts[keyID.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }, default: 0] += count
        }
        return (counts, malformed)
    }

    /// Seals every stored key again under the KEK's primary key, `batchSize`
    /// rows per transaction; returns how many rows it rewrote. `progress`
    /// hears the rows done so far after each batch.
    @discardableResult
    public func rewrap(batchSize: Int = 500, progress: (@Sendable (Int) -> Void)? = nil) async throws -> Int {
        guard (1...100_000).contains(batchSize) else {
            throw CofferError(.invalidArgument, "a batch is 1 to 100,000 rows")
        }
        let ring = kek
        let primary = Self.keyIDBytes(ring.primaryID)
        var done = 0
        while true {
            let pending = try await rows.wrapped(notUnder: primary, limit: batchSize)
            if pending.isEmpty { return done }
            let rewrapped = try pending.map { row -> (PendingRow, Data) in
                let context = try row.name.context(version: row.version)
                let key = try openWrapped(row.wrapped, context: context)
                return (row, try ring.seal(key, context: context))
            }
            done += try await rows.replaceWrapped(
                rewrapped, now: now(),
                audit: {
                    var record = AuditEntry.Record(actor: "server", action: "rewrap")
                    record.detail = "under KEK key \(String(format: "%08x", ring.primaryID))"
                    return record
                }())
            progress?(done)
        }
    }

    /// Reads the KEK ring again (the server does every 30 seconds, so that
    /// after a rotation by another process it seals new keys under the new
    /// primary), and forgets which KEK key ids earlier readings lacked.
    public func reloadKEK() throws {
        guard let reload else { return }
        replaceRing(with: try reload())
    }

    static func keyIDBytes(_ id: UInt32) -> Data { withUnsafeBytes(of: id.bigEndian) { Data($0) } }
}
#endif
