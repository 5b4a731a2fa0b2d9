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
    /// move it to the current version as it opens, use
    /// ``unlock(purpose:device:_:moving:)`` (`coffer keyring passwd
    /// --new-kek-server` for a key ring file).
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
        let opened = try await search(purpose: purpose, device: device, open)
        return (opened.value, opened.version, opened.current)
    }

    /// ``unlock(purpose:device:_:)``, and when an older version opened it,
    /// `move` is handed what opened, that version's secret and the current
    /// one's, to put the current version in the older one's place (the
    /// following of a server's rotation: docs/store.md, "A key server's
    /// key"). Once every device has opened, the older version can be
    /// retired. When `move` throws, so does this (what opened stays open
    /// in `move`'s hands: close it there if it must not leak).
    ///
    /// ```swift
    /// let opened = try await client.unlock(purpose: "notes") { secret in
    ///     try RecordStore.open(orCreate: path, schema: schema, secret: secret)
    /// } moving: { store, older, current in
    ///     try store.replaceSlot(openedBy: older, with: current)
    /// }
    /// ```
    ///
    /// - Returns: what `open` returned, the version that opened it (now
    ///   moved when below the current one), and the current version.
    public func unlock<T>(
        purpose: String, device: String? = nil, _ open: (UnlockSecret) throws -> T,
        moving move: (T, _ older: UnlockSecret, _ current: UnlockSecret) throws -> Void
    ) async throws -> (value: T, version: Int, current: Int) {
        let opened = try await search(purpose: purpose, device: device, open)
        if opened.version < opened.current {
            try move(opened.value, opened.secret, opened.currentSecret)
        }
        return (opened.value, opened.version, opened.current)
    }

    /// The current version, then each older one, newest first, until one opens.
    private func search<T>(
        purpose: String, device: String?, _ open: (UnlockSecret) throws -> T
    ) async throws -> (value: T, version: Int, current: Int, secret: UnlockSecret, currentSecret: UnlockSecret) {
        let current = try await currentKey(purpose: purpose, device: device)
        let currentSecret = UnlockSecret.key(current.key)
        if let value = try Self.attempt(open, currentSecret) {
            return (value, current.version, current.version, currentSecret, currentSecret)
        }
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
            let secret = UnlockSecret.key(older.key)
            if let value = try Self.attempt(open, secret) {
                return (value, version, current.version, secret, currentSecret)
            }
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
