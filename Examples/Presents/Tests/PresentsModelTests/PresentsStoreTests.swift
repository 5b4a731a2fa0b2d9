import Coffer
import CofferKeyClient
import Foundation
import PresentsModel
import Testing

/// The seed app's model on Coffer: the list screen's queries, a file that
/// shows who gets a present but never what, and both ways to unlock it.
@Suite struct PresentsStoreTests {
    static let fast = PasswordKDF.scrypt(logN: 10, r: 8, p: 1)

    static func file() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("presents-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder.appendingPathComponent("presents.sqlite")
    }

    @Test func theListIsOrderedByRecipientAndSearchedByName() async throws {
        let url = try Self.file()
        let presents = try await PresentsStore.open(
            at: url, unlock: .password("Xmas 2026"), kdf: Self.fast, rollbackGuard: nil)
        try await presents.add(toWhom: "Sam", description: "a kite")
        let scarf = try await presents.add(toWhom: "Grandma", description: "a knitted scarf")
        try await presents.add(toWhom: "Grandma", description: "tea")
        #expect(try await presents.all().map(\.description) == ["a knitted scarf", "tea", "a kite"])
        #expect(try await presents.presents(for: "Grandma").map(\.description) == ["a knitted scarf", "tea"])
        #expect(try await presents.presents(for: "grandma").isEmpty)
        #expect(try await presents.count() == 3)
        var changed = scarf
        changed.description = "a red scarf"
        #expect(try await presents.update(changed))
        #expect(try await presents.remove(id: try #require(scarf.id) + 1))
        #expect(try await presents.all().map(\.description) == ["a red scarf", "a kite"])
        #expect(presents.logLine(changed).contains("Grandma") && !presents.logLine(changed).contains("scarf"))
    }

    @Test func theFileShowsWhoButNeverWhatAndOpensOnlyWithThePassword() async throws {
        let url = try Self.file()
        do {
            let presents = try await PresentsStore.open(
                at: url, unlock: .password("Xmas 2026"), kdf: Self.fast, rollbackGuard: nil)
            try await presents.add(toWhom: "Grandma", description: "a knitted scarf")
        }
        // The file as anyone with the disk reads it (the WAL included).
        var bytes = Data()
        for suffix in ["", "-wal"] {
            bytes += (try? Data(contentsOf: URL(fileURLWithPath: url.path + suffix))) ?? Data()
        }
        #expect(bytes.range(of: Data("Grandma".utf8)) != nil)
        #expect(bytes.range(of: Data("knitted".utf8)) == nil)
        await #expect(throws: CofferError.self) {
            _ = try await PresentsStore.open(at: url, unlock: .password("xmas 2026"), rollbackGuard: nil)
        }
        let again = try await PresentsStore.open(at: url, unlock: .password("Xmas 2026"), rollbackGuard: nil)
        #expect(try await again.all().map(\.description) == ["a knitted scarf"])
    }

    /// The seed's second app: the key comes from the key server after
    /// sign-in (here a transport that answers as the server does).
    @Test func theServersKeyUnlocksThePresents() async throws {
        let served = ServedKey(key: Data((0..<32).map { UInt8($0) }))
        let client = try KeyServerClient(
            server: URL(string: "https://keys.example.com")!, account: "alice", token: { "alice's id token" },
            transport: served)
        let url = try Self.file()
        let presents = try await PresentsStore.open(at: url, unlock: .server(client), rollbackGuard: nil)
        try await presents.add(toWhom: "Grandma", description: "a knitted scarf")
        let later = try await PresentsStore.open(at: url, unlock: .server(client), rollbackGuard: nil)
        #expect(try await later.all().map(\.description) == ["a knitted scarf"])
        // No key cache was given: each opening asked the server once.
        #expect(
            served.requests
                == Array(repeating: "POST https://keys.example.com/v1/keys/presents", count: 2))
        // Another user's key does not open them.
        let other = try KeyServerClient(
            server: URL(string: "https://keys.example.com")!, account: "bob", token: { "bob's id token" },
            transport: ServedKey(key: Data(repeating: 7, count: 32)))
        await #expect(throws: CofferError.self) {
            _ = try await PresentsStore.open(at: url, unlock: .server(other), rollbackGuard: nil)
        }
    }
}

extension PresentsStoreTests {
    /// The server's operator rotates the key: the presents still open (with
    /// version 1, once), move to version 2 as they open, and after version 1
    /// is retired open with version 2 at the first try.
    @Test func thePresentsFollowTheServersRotation() async throws {
        let served = ServedKey(key: Data((0..<32).map { UInt8($0) }))
        let client = try KeyServerClient(
            server: URL(string: "https://keys.example.com")!, account: "alice", token: { "alice's id token" },
            transport: served)
        let url = try Self.file()
        let presents = try await PresentsStore.open(at: url, unlock: .server(client), rollbackGuard: nil)
        try await presents.add(toWhom: "Grandma", description: "a knitted scarf")
        try presents.close()
        served.rotate(to: Data(repeating: 0x42, count: 32))
        let moved = try await PresentsStore.open(at: url, unlock: .server(client), rollbackGuard: nil)
        #expect(try await moved.all().map(\.description) == ["a knitted scarf"])
        try moved.close()
        #expect(
            served.requests.suffix(2) == [
                "POST https://keys.example.com/v1/keys/presents",
                "GET https://keys.example.com/v1/keys/presents/versions/1",
            ])
        served.retireOlder()
        let later = try await PresentsStore.open(at: url, unlock: .server(client), rollbackGuard: nil)
        #expect(try await later.all().map(\.description) == ["a knitted scarf"])
        #expect(served.requests.last == "POST https://keys.example.com/v1/keys/presents")
    }

    /// The list screen's sequence: the presents at once, then after each
    /// change, made here or through another handle on the file (as a share
    /// extension would).
    @Test func theListFollowsEveryChange() async throws {
        let url = try Self.file()
        let presents = try await PresentsStore.open(
            at: url, unlock: .password("Xmas 2026"), kdf: Self.fast, rollbackGuard: nil)
        let extensionSide = try await PresentsStore.open(at: url, unlock: .password("Xmas 2026"), rollbackGuard: nil)
        var changes = presents.changes().makeAsyncIterator()
        #expect(try await changes.next() == [])
        let kite = try await presents.add(toWhom: "Sam", description: "a kite")
        #expect(try await changes.next() == [kite])
        let scarf = try await extensionSide.add(toWhom: "Grandma", description: "a scarf")
        #expect(try await changes.next() == [scarf, kite])
        try await presents.remove(kite)
        #expect(try await changes.next() == [scarf])
    }

    /// The password changed: the new one opens the presents, the old one no longer.
    @Test func thePasswordChanges() async throws {
        let url = try Self.file()
        let presents = try await PresentsStore.open(
            at: url, unlock: .password("Xmas 2026"), kdf: Self.fast, rollbackGuard: nil)
        let kite = try await presents.add(toWhom: "Sam", description: "a kite")
        try await presents.changePassword(to: "Xmas 2027", kdf: Self.fast)
        try presents.close()
        await #expect(throws: CofferError.self) {
            _ = try await PresentsStore.open(at: url, unlock: .password("Xmas 2026"), rollbackGuard: nil)
        }
        let again = try await PresentsStore.open(at: url, unlock: .password("Xmas 2027"), rollbackGuard: nil)
        #expect(try await again.remove(kite))
        #expect(try await again.count() == 0)
    }
}

/// A transport that answers key requests as a key server answers `POST
/// /v1/keys/{purpose}` (the current version) and `GET …/versions/{n}`
/// (410 for a retired one), and keeps what was asked.
final class ServedKey: KeyServerTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var asked: [String] = []
    /// The key of each version, version 1 first; nil for a retired one.
    private var versions: [Data?]

    init(key: Data) { versions = [key] }

    func rotate(to key: Data) { lock.withLock { versions.append(key) } }
    func retireOlder() { lock.withLock { for index in versions.indices.dropLast() { versions[index] = nil } } }

    /// The requests made so far, as `METHOD URL`.
    var requests: [String] { lock.withLock { asked } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        lock.withLock { asked.append("\(request.method) \(request.url.absoluteString)") }
        #expect(request.headers.contains { $0.name == "Authorization" && $0.value.hasPrefix("Bearer ") })
        let parts = request.url.pathComponents  // ["/", "v1", "keys", purpose, "versions", n]
        let purpose = parts[3]
        let (version, key): (Int, Data?) = lock.withLock {
            if parts.count == 6, let asked = Int(parts[5]), versions.indices.contains(asked - 1) {
                return (asked, versions[asked - 1])
            }
            return (versions.count, versions.last!)
        }
        guard let key else {
            let problem = #"{"type":"about:blank","title":"retired","status":410,"code":"key-retired"}"#
            return TransportResponse(
                status: 410, headers: [("Content-Type", "application/problem+json")], body: Data(problem.utf8))
        }
        let body = """
            {"purpose":"\(purpose)","version":\(version),"keyId":"0011223344556677","key":"\(key.base64EncodedString())"}
            """
        return TransportResponse(
            status: 200, headers: [("Content-Type", "application/json")], body: Data(body.utf8))
    }
}
