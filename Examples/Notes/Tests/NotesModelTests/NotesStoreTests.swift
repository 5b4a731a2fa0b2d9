import Coffer
import CofferKeyClient
import CofferStore
import Foundation
import NotesModel
import Testing

/// The trial's asks, each a test, on Linux.
@Suite struct NotesStoreTests {
    static let fast = PasswordKDF.scrypt(logN: 10, r: 8, p: 1)

    static func file() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("notes-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder.appendingPathComponent("notes.sqlite")
    }

    static func open(_ url: URL, _ password: String = "correct horse") async throws -> NotesStore {
        try await NotesStore.open(at: url, password: password, kdf: fast, rollbackGuard: nil)
    }

    @Test func thePasswordChangesAndARecoveryKeyOpensTheNotes() async throws {
        let url = try Self.file()
        let notes = try await Self.open(url)
        try await notes.add(Note(title: "Diary", body: "dear diary", tag: "Private"))
        try await notes.changePassword(to: "battery staple", kdf: Self.fast)
        let recovery = try await notes.makeRecoveryKey()
        try notes.close()
        await #expect(throws: CofferError.self) { _ = try await Self.open(url) }
        let byPassword = try await Self.open(url, "battery staple")
        #expect(try await byPassword.tagged("private").map(\.body) == ["dear diary"])
        try byPassword.close()
        let byRecovery = try NotesStore.open(at: url, recoveryKey: recovery.lowercased(), rollbackGuard: nil)
        #expect(try await byRecovery.titled(startingWith: "Dia").count == 1)
    }

    @Test func queriesBeyondEquality() async throws {
        let notes = try await Self.open(try Self.file())
        let day = 86_400.0
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for (index, title) in ["Shopping list", "shop opening hours", "50% off", "Trip", "Shop"].enumerated() {
            try await notes.add(Note(title: title, body: "b", createdAt: start.addingTimeInterval(Double(index) * day)))
        }
        #expect(try await notes.since(start.addingTimeInterval(3 * day)).map(\.title) == ["Shop", "Trip"])
        #expect(
            try await notes.titled(containing: "SHOP").map(\.title) == ["Shop", "shop opening hours", "Shopping list"])
        #expect(try await notes.titled(startingWith: "Shop").map(\.title) == ["Shop", "Shopping list"])
        #expect(try await notes.titled(containing: "%").map(\.title) == ["50% off"])
        #expect(try await notes.titled(oneOf: ["Trip", "Shop", "nothing"]).map(\.title) == ["Shop", "Trip"])
    }

    /// The app's next version adds a property its store does not have: the
    /// open is refused, naming it, before any note is read.
    struct NoteWithPin: SchemaRecord {
        static let storeTable = "notes"
        static let storeSchema = RecordSchema(
            primaryKey: CodingKeys.id, .sealed(CodingKeys.body, bind: [CodingKeys.title]))
        var id: Int64?
        var title: String
        var body: String
        var pinned: Bool
    }

    @Test func aTypeThatDriftedFromTheStoreIsRefusedAtOpen() async throws {
        let url = try Self.file()
        try await Self.open(url).close()
        do {
            _ = try RecordStore.open(
                sqlite: url.path, secret: .password("correct horse"), records: [NoteWithPin.self], rollbackGuard: nil)
            Issue.record("a drifted type was taken")
        } catch let error as CofferError {
            #expect(error.description.hasPrefix("NoteWithPin.pinned does not match the store's notes"), "\(error)")
        }
    }

    /// The `coffer` tool built with this checkout (scripts/check-example
    /// names it in COFFER_BIN).
    static var coffer: URL {
        get throws {
            if let path = ProcessInfo.processInfo.environment["COFFER_BIN"] { return URL(fileURLWithPath: path) }
            let built = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("../../.build/debug/coffer").standardized
            guard FileManager.default.isExecutableFile(atPath: built.path) else {
                throw CofferError(.unsupported, "build coffer first (swift build at the top), or set COFFER_BIN")
            }
            return built
        }
    }

    /// A second process (`coffer store put`, as a share extension would
    /// write) adds a note: the list screen's sequence shows it.
    @Test func theListSeesAnotherProcesssNote() async throws {
        let url = try Self.file()
        let notes = try await Self.open(url)
        try await notes.add(Note(title: "First", body: "one", createdAt: Date(timeIntervalSince1970: 1)))
        var list = notes.newestFirst().makeAsyncIterator()
        #expect(try await list.next()?.map(\.title) == ["First"])
        let password = url.deletingLastPathComponent().appendingPathComponent("pw")
        try Data("correct horse\n".utf8).write(to: password)
        let put = Process()
        put.executableURL = try Self.coffer
        put.arguments = ["store", "put", "--db", url.path, "--passphrase-file", password.path, "--table", "notes"]
        let input = Pipe()
        put.standardInput = input
        put.standardOutput = FileHandle.nullDevice
        try put.run()
        input.fileHandleForWriting.write(
            Data(#"{"title": "From the extension", "body": "shared", "createdAt": 2000}"#.utf8))
        try input.fileHandleForWriting.close()
        put.waitUntilExit()
        try #require(put.terminationStatus == 0)
        #expect(try await list.next()?.map(\.title) == ["From the extension", "First"])
    }

    /// The server's operator rotates the notes key and later retires the
    /// old version: the notes open throughout, moving to the current
    /// version the first time they open after the rotation.
    @Test func theNotesFollowTheServersRotation() async throws {
        let server = RotatingKeys()
        let keys = try KeyServerClient(
            server: URL(string: "https://keys.example.com")!, account: "alice", token: { "token" }, transport: server)
        let url = try Self.file()
        let notes = try await NotesStore.open(at: url, keys: keys, rollbackGuard: nil)
        try await notes.add(Note(title: "Kept", body: "through rotations"))
        try notes.close()
        server.rotate()
        try await NotesStore.open(at: url, keys: keys, rollbackGuard: nil).close()
        server.retireOlder()
        let after = try await NotesStore.open(at: url, keys: keys, rollbackGuard: nil)
        #expect(try await after.titled(startingWith: "Kept").map(\.body) == ["through rotations"])
    }
}

/// Answers as a key server does: `POST /v1/keys/notes` with the current
/// version, `GET …/versions/N` with an older one, 410 once it is retired.
final class RotatingKeys: KeyServerTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var keys: [Data?] = [Data(repeating: 1, count: 32)]

    func rotate() { lock.withLock { keys.append(Data(repeating: UInt8(keys.count + 1), count: 32)) } }
    func retireOlder() { lock.withLock { for index in keys.indices.dropLast() { keys[index] = nil } } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let parts = request.url.pathComponents
        let (version, key): (Int, Data?) = lock.withLock {
            if parts.count == 6, let asked = Int(parts[5]), keys.indices.contains(asked - 1) {
                return (asked, keys[asked - 1])
            }
            return (keys.count, keys.last!)
        }
        guard let key else {
            return TransportResponse(
                status: 410, headers: [("Content-Type", "application/problem+json")],
                body: Data(#"{"type":"about:blank","title":"retired","status":410,"code":"key-retired"}"#.utf8))
        }
        let body =
            #"{"purpose":"notes","version":\#(version),"keyId":"0011223344556677","key":"\#(key.base64EncodedString())"}"#
        return TransportResponse(status: 200, headers: [("Content-Type", "application/json")], body: Data(body.utf8))
    }
}
