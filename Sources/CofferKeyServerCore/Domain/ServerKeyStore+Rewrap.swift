#if Server
import Coffer
import Foundation

/// KEK rotation: after a new primary key is added to the KEK ring, every
/// stored key is sealed again under it, in batches, while the server
/// serves. Each batch is one transaction that rewrites a row only if it is
/// still as read, so the job can be stopped (even by `kill -9`) and run
/// again, by any process, and ends when no row is left under another key.
extension ServerKeyStore {
    /// Rows still sealed under a KEK key other than the primary: stored
    /// keys and the server's own secrets (the audit anchor key, the DPoP
    /// nonce key) alike.
    public func rowsToRewrap() async throws -> Int {
        let primary = Self.keyIDBytes(kek.primaryID)
        let keys = try await rows.wrappedCounts().filter { $0.key != primary }.values.reduce(0, +)
        return try await keys + rows.secrets().values.filter { Self.sealingKeyID($0) != primary }.count
    }

    /// What each KEK key sealed, by the KEK key's id: stored keys and
    /// server secrets, and how many rows are too short to name a key
    /// (`coffer-server kek list`). A row whose header names a key the ring
    /// lacks counts under that id.
    public func rowsByKEKKey() async throws -> KEKUsage {
        var usage = KEKUsage()
        for (keyID, count) in try await rows.wrappedCounts() {
            guard keyID.count == 4 else {
                usage.malformed += count
                continue
            }
            usage.keys[Self.keyID(keyID), default: 0] += count
        }
        for (name, sealed) in try await rows.secrets() {
            let keyID = Self.sealingKeyID(sealed)
            guard keyID.count == 4 else {
                usage.malformedSecrets.append(name)
                continue
            }
            usage.secrets[Self.keyID(keyID), default: []].append(name)
        }
        return usage
    }

    /// Seals every stored key again under the KEK's primary key, `batchSize`
    /// rows per transaction, then the server's own secrets (the audit anchor
    /// key, the DPoP nonce key); returns how many stored keys it rewrote.
    /// `progress` hears the keys done so far after each batch.
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
            if pending.isEmpty {
                try await rewrapSecrets()
                return done
            }
            var rewrapped: [(PendingRow, Data)] = []
            for row in pending {
                let context = try row.name.context(version: row.version)
                let key = try await openWrapped(row.wrapped, context: context)
                rewrapped.append((row, try ring.seal(key, context: context)))
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

    /// Seals each server secret not under the KEK's primary again under it,
    /// each in a transaction that replaces it only if still as read; returns
    /// how many it resealed. Without this a rotation that disables the old
    /// KEK key would leave the audit anchor key and the DPoP nonce key
    /// unopenable (operator trial 4).
    @discardableResult
    func rewrapSecrets() async throws -> Int {
        let ring = kek
        let primary = Self.keyIDBytes(ring.primaryID)
        var done = 0
        for (name, sealed) in try await rows.secrets().sorted(by: { $0.key < $1.key })
        where Self.sealingKeyID(sealed) != primary {
            let context = try Self.secretContext(name)
            let value = try await openSecret(name, sealed: sealed, context: context)
            var record = AuditEntry.Record(actor: "server", action: "rewrap")
            record.detail = "server secret \(name) resealed under KEK key \(String(format: "%08x", ring.primaryID))"
            if try await rows.replaceSecret(
                named: name, old: sealed, sealed: try ring.seal(value, context: context), now: now(), audit: record)
            {
                done += 1
            }
        }
        return done
    }

    /// Reads the KEK ring again (the server does every 30 seconds, so that
    /// after a rotation by another process it seals new keys under the new
    /// primary), and forgets which KEK key ids earlier readings lacked.
    public func reloadKEK() async throws {
        guard let reload = reloader.withLock({ $0 }) else { return }
        replaceRing(with: try await reload())
    }

    static func keyIDBytes(_ id: UInt32) -> Data { withUnsafeBytes(of: id.bigEndian) { Data($0) } }
    static func keyID(_ bytes: Data) -> UInt32 { bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
    /// The 4 bytes after a sealed value's version byte (fewer when cut short).
    static func sealingKeyID(_ sealed: Data) -> Data { Data(sealed.dropFirst().prefix(4)) }
}

/// What the KEK ring's keys sealed in a key server's database
/// (`coffer-server kek list`).
public struct KEKUsage: Sendable, Equatable {
    /// Stored keys, by the KEK key id that sealed them.
    public var keys: [UInt32: Int] = [:]
    /// The server's own secrets (`audit-anchor-key`, `dpop-nonce-key`), by
    /// the KEK key id that sealed them.
    public var secrets: [UInt32: [String]] = [:]
    /// Stored keys too short to name a KEK key.
    public var malformed = 0
    /// Server secrets too short to name a KEK key.
    public var malformedSecrets: [String] = []
}
#endif
