#if Server
import Coffer
import Crypto
import Foundation

/// The key the audit chain's links are made under (docs/key-server-audit.md,
/// "Keyed links"): 256 random bits kept in `server_secrets` sealed under the
/// KEK (`audit-link-key`), so a database writer without the KEK cannot
/// compute a link, and so cannot relink the chain after removing or
/// editing an entry.
///
/// The key itself never leaves the server. Each append (a batch of
/// entries) draws a random 16-byte nonce, stored in each of its entries'
/// `link` column, and links its entries under the batch's key,
/// HMAC-SHA-256(link key, "coffer audit link v2" ‖ nonce). On PostgreSQL,
/// where the database numbers and links the entries so that replicas never
/// fork the chain, the function is handed only that batch's key, for that
/// one statement: it is stored nowhere, so what a writer finds in the
/// database (or a backup) later opens no link.
package struct AuditLinkKey: Sendable {
    let key: SymmetricKey

    init(_ key: SymmetricKey) { self.key = key }

    static let nonceSize = 16

    /// A new batch: a random nonce and the key its links are made under.
    func batch() -> AuditLinkBatch {
        // swift-crypto's generator, in user space: no system call per append.
        let nonce = SymmetricKey(size: .init(bitCount: Self.nonceSize * 8)).withUnsafeBytes { Data($0) }
        return AuditLinkBatch(nonce: nonce, key: batchKey(nonce: nonce))
    }

    /// The key of the batch whose entries carry `nonce`.
    func batchKey(nonce: Data) -> SymmetricKey {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Array("coffer audit link v2".utf8))
        mac.update(data: nonce)
        return SymmetricKey(data: Data(mac.finalize()))
    }
}

/// One append's nonce and link key.
struct AuditLinkBatch: Sendable {
    let nonce: Data
    let key: SymmetricKey

    /// HMAC-SHA-256's two padded keys (RFC 2104: the key, zero-padded to
    /// SHA-256's 64-byte block, XORed with 0x36 and with 0x5c), which is
    /// all PostgreSQL's `sha256` needs to compute the same links.
    var pads: (inner: Data, outer: Data) {
        key.withUnsafeBytes { bytes in
            var block = [UInt8](repeating: 0, count: 64)
            for (index, byte) in bytes.enumerated() { block[index] = byte }
            return (Data(block.map { $0 ^ 0x36 }), Data(block.map { $0 ^ 0x5c }))
        }
    }
}

/// Where a backend finds the link key: fetched once (made by the first
/// replica that needs it) through `source`, which the ``ServerKeyStore``
/// sets, then kept.
final class AuditLinks: Sendable {
    private let cached = Locked<AuditLinkKey?>(nil)
    private let source = Locked<(@Sendable () async throws -> SymmetricKey)?>(nil)

    /// Where the key comes from (the server secret `audit-link-key`).
    func use(_ fetch: @escaping @Sendable () async throws -> SymmetricKey) {
        source.withLock { $0 = fetch }
    }

    /// The key, fetched the first time.
    func key() async throws -> AuditLinkKey {
        if let key = cached.withLock({ $0 }) { return key }
        guard let fetch = source.withLock({ $0 }) else {
            throw KeyServerError(.auditFailed, "the audit link key has no source")
        }
        let key = AuditLinkKey(try await fetch())
        cached.withLock { $0 = key }
        return key
    }

    /// The key as ``key()`` fetched it, for a writer that cannot wait
    /// (SQLite's release runner): every release awaits ``key()`` before
    /// it joins a batch.
    func loaded() throws -> AuditLinkKey {
        guard let key = cached.withLock({ $0 }) else {
            throw KeyServerError(.auditFailed, "the audit link key was not fetched before the append")
        }
        return key
    }
}

extension ServerKeyStore {
    static let auditLinkSecret = "audit-link-key"

    /// Points the backend's appends at the link key, made by the first
    /// replica that appends (as the anchor key is). A server whose KEK
    /// ring cannot open it cannot audit, so it releases nothing: every
    /// server on one database shares its KEK ring.
    func linkAuditAppends() {
        rows.auditLinks.use { [weak self] in
            guard let self else { throw KeyServerError(.auditFailed, "the key store was closed") }
            do {
                return try await self.sharedSecretKey(Self.auditLinkSecret)
            } catch let error as CofferError {
                throw KeyServerError(
                    .keyUnreadable,
                    "the audit link key did not open under the server's KEK, so nothing can be audited: \(error)"
                )
            }
        }
    }

    /// The link key as the database holds it, without making one: nil
    /// when there is none (a log written before links were keyed, or a
    /// writer removed it, which the keyed entries then show).
    func storedAuditLinkKey() async throws -> AuditLinkKey? {
        guard let sealed = try await rows.secrets()[Self.auditLinkSecret] else { return nil }
        let context = try Self.secretContext(Self.auditLinkSecret)
        return AuditLinkKey(
            SymmetricKey(data: try await openSecret(Self.auditLinkSecret, sealed: sealed, context: context)))
    }
}
#endif
