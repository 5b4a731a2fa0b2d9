import Coffer
import Foundation

extension KeyServerClient {
    /// Version `version` of the server's key for `purpose` as an unlock secret.
    public func unlockSecret(purpose: String, version: Int, device: String? = nil) async throws -> UnlockSecret {
        .key(try await key(purpose: purpose, version: version, device: device).key)
    }

    /// Opens what "the server's key for `purpose`" unlocks, whichever
    /// version of it sealed it (security review 3, G12): `open` is tried
    /// with the current version, then with each older one the server still
    /// serves, newest first, while it throws `wrongPassword`. A key ring or
    /// store sealed before an operator rotated the key so still opens; to
    /// move it to the current version, change its secret to
    /// `unlockSecret(purpose:)` (`coffer keyring passwd --new-kek-server`).
    /// A retired version (410) ends the search: those below it are retired
    /// too, and what they sealed no longer opens through the server.
    ///
    /// ```swift
    /// let opened = try await client.unlock(purpose: "notes") { secret in
    ///     try RecordStore.open(sqlite: path, secret: secret)
    /// }
    /// if opened.version < opened.current { /* sealed under an older version */ }
    /// ```
    ///
    /// - Returns: what `open` returned, the version that opened it, and the
    ///   current version.
    public func unlock<T>(
        purpose: String, device: String? = nil, _ open: (UnlockSecret) throws -> T
    ) async throws -> (value: T, version: Int, current: Int) {
        let current = try await currentKey(purpose: purpose, device: device)
        if let value = try Self.attempt(open, .key(current.key)) { return (value, current.version, current.version) }
        var version = current.version - 1
        while version >= 1 {
            let older: ServerKey
            do {
                older = try await key(purpose: purpose, version: version, device: device)
            } catch let error as KeyClientError where error.status == 410 {
                throw CofferError(
                    .wrongPassword,
                    "no version of the server's key for \(purpose) from \(current.version) down to \(version + 1) opens it, and version \(version) and older are retired"
                )
            }
            if let value = try Self.attempt(open, .key(older.key)) { return (value, version, current.version) }
            version -= 1
        }
        throw CofferError(
            .wrongPassword, "no version of the server's key for \(purpose) (1 to \(current.version)) opens it")
    }

    /// `open(secret)`, or nil when the secret is not the one (`wrongPassword`).
    static func attempt<T>(_ open: (UnlockSecret) throws -> T, _ secret: UnlockSecret) throws -> T? {
        do { return try open(secret) } catch let error as CofferError where error.code == .wrongPassword {
            return nil
        }
    }
}
