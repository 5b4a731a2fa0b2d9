import Coffer

/// Async twins of the item calls, for servers: the same operation, run off
/// the cooperative thread pool (a file keychain locks and writes its file;
/// the Secret Service and Apple's keychain make blocking IPC calls).
///
/// ```swift
/// let keychain = try FileKeychain.open(path: path, secret: .key(key))
/// let token = try await keychain.copyData(.password(service: "api", account: "me"))
/// ```
extension Keychain {
    public func add(_ item: KeychainItem, data: SecretBytes) async throws {
        try await BlockingWork.run { try self.add(item, data: data) }
    }

    public func copyMatching(_ query: KeychainQuery) async throws -> [KeychainItem] {
        try await BlockingWork.run { try self.copyMatching(query) }
    }

    public func copyData(_ query: KeychainQuery) async throws -> SecretBytes {
        try await BlockingWork.run { try self.copyData(query) }
    }

    public func update(_ query: KeychainQuery, with changes: KeychainChanges) async throws {
        try await BlockingWork.run { try self.update(query, with: changes) }
    }

    public func delete(_ query: KeychainQuery) async throws {
        try await BlockingWork.run { try self.delete(query) }
    }
}
