/// Async twins: the same calls, run off the cooperative thread pool (the
/// file lock, the KDF and the file I/O block).
///
/// ```swift
/// let store = KeyRingStore(path: "server.keyring", secret: .key(kek))
/// let ring = try await store.read().keyRing
/// let newPrimary = try await store.modify { file in try file.update { try $0.rotate() } }
/// ```
extension KeyRingStore {
    public func create(_ keyRing: KeyRing = KeyRing(), kdf: PasswordKDF = .defaultScrypt) async throws -> KeyRingFile {
        try await BlockingWork.run { try self.create(keyRing, kdf: kdf) }
    }

    public func read() async throws -> KeyRingFile {
        try await BlockingWork.run { try self.read() }
    }

    @discardableResult
    public func modify<T: Sendable>(_ change: @escaping @Sendable (inout KeyRingFile) throws -> T) async throws -> T {
        try await BlockingWork.run { try self.modify(change) }
    }
}
