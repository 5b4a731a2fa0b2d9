import Coffer
import CofferKeychain
import Testing

/// The async twins of the item calls give the blocking calls' results,
/// errors included, on every backend they are defined for (all of them:
/// they are protocol extensions).
@Suite struct KeychainAsyncTests {
    @Test func twinsMatchTheBlockingCalls() async throws {
        let keychain: any Keychain = InMemoryKeychain()
        let query = KeychainQuery.password(service: "api", account: "me")
        try await keychain.add(.password(service: "api", account: "me"), data: SecretBytes(Array("one".utf8)))
        #expect(try await keychain.copyData(query) == SecretBytes(Array("one".utf8)))
        #expect(try await keychain.copyMatching(query).count == 1)

        var changes = KeychainChanges()
        changes.data = SecretBytes(Array("two".utf8))
        try await keychain.update(query, with: changes)
        #expect(try await keychain.copyData(query) == SecretBytes(Array("two".utf8)))

        await #expect(throws: KeychainError(.duplicateItem, "")) {
            try await keychain.add(.password(service: "api", account: "me"), data: SecretBytes([1]))
        }
        try await keychain.delete(query)
        await #expect(throws: KeychainError(.itemNotFound, "")) { try await keychain.copyData(query) }
    }
}
