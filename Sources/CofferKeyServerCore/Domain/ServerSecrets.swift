#if Server
import Coffer
import Crypto
import Foundation

/// Secrets the server keeps for itself in `server_secrets`, sealed under
/// the KEK: the audit anchor key and the DPoP nonce key.
extension ServerKeyStore {
    /// A key all replicas share: 256 random bits made by the first replica
    /// that needs it, kept in the database (`server_secrets`) sealed under
    /// the KEK with its name as context, so a database writer can neither
    /// read it nor put in one of their own.
    package func sharedSecretKey(_ name: String) async throws -> SymmetricKey {
        let context = try Self.secretContext(name)
        let made = try SymmetricKey(size: .bits256).withUnsafeBytes { try kek.seal($0, context: context) }
        let sealed = try await rows.secret(named: name, make: made)
        return SymmetricKey(data: try await openSecret(name, sealed: sealed, context: context))
    }

    package static func secretContext(_ name: String) throws -> SealingContext {
        try SealingContext("coffer-server", name)
    }

    /// Opens a server secret, naming it (and what to do) when its KEK key
    /// is disabled or missing, so an operator can act on the error.
    package func openSecret(_ name: String, sealed: Data, context: SealingContext) async throws -> Data {
        do {
            return try await openWrapped(sealed, context: context)
        } catch let error as CofferError where error.code == .keyNotFound || error.code == .keyDisabled {
            let id = (try? SealedValue.keyID(of: sealed)).map { String(format: "%08x", $0) } ?? "unknown"
            throw error.prefixed(
                "the server secret \(name) (sealed under KEK key \(id); enable that key with coffer-server kek enable, then kek rewrap reseals it under the primary)"
            )
        }
    }
}
#endif
