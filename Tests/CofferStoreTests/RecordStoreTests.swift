import Coffer
import CofferStore
import Foundation
import GRDB
import Testing

/// The SQLite record store: the seed's presents, exact finds through
/// colliding blind indexes, no plaintext on disk, and cells that refuse to
/// open anywhere but their own row.
@Suite struct RecordStoreTests {
    static let fast = PasswordKDF.scrypt(logN: 10, r: 8, p: 1)
    static let passphrase = UnlockSecret.password(Array("presents passphrase".utf8))

    static func schema(bits: Int = 16) throws -> StoreSchema {
        try StoreSchema(tables: [
            .init(
                name: "presents", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer),
                    .init(name: "to", type: .text),
                    .init(name: "description", type: .text, sealed: true, bind: ["to"]),
                    .init(
                        name: "email", type: .text, sealed: true,
                        indexes: [.init(name: "email_exact", transforms: [.trim, .lowercase], bits: bits)]),
                ])
        ])
    }

    final class Folder {
        let path: String
        init() throws {
            path = NSTemporaryDirectory() + "coffer-store-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
        var database: String { path + "/store.sqlite" }
    }

    /// A file's bytes as another process reads them (`cat`), nil when there
    /// is no such file. A store of this process has the database open, and
    /// an open and close of its files here would drop every POSIX lock the
    /// process holds on them, SQLite's included (docs/key-server-operating.md, "Keys
    /// are rows"); the scans below read them so.
    static func bytesReadElsewhere(_ path: String) throws -> Data? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let cat = Process()
        cat.executableURL = URL(fileURLWithPath: "/bin/cat")
        cat.arguments = [path]
        let pipe = Pipe()
        cat.standardOutput = pipe
        try cat.run()
        let bytes = pipe.fileHandleForReading.readDataToEndOfFile()
        cat.waitUntilExit()
        guard cat.terminationStatus == 0 else { throw CofferError(.io, "cat \(path) failed") }
        return bytes
    }

    /// One bulk put whose rows give different sets of clear fields (so
    /// its INSERTs change shape mid-batch), with empty, non-ASCII and long
    /// clear text, empty and non-empty bytes, and nulls: every row reads
    /// back as written, clear and sealed.
    @Test func aBulkPutOfMixedShapesReadsBackExactly() throws {
        let folder = try Folder()
        let schema = try StoreSchema(tables: [
            .init(
                name: "things", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer), .init(name: "label", type: .text),
                    .init(name: "raw", type: .bytes),
                    .init(name: "secret", type: .text, sealed: true, bind: ["label"]),
                    .init(
                        name: "code", type: .bytes, sealed: true,
                        indexes: [.init(name: "code_exact", transforms: [], bits: 24)]),
                ])
        ])
        let store = try RecordStore.create(
            sqlite: folder.database, schema: schema, secret: Self.passphrase, kdf: Self.fast)
        let labels: [StoreValue] = [.text(""), .text("ünï ✓"), .text(String(repeating: "long ", count: 400)), .null]
        let raws: [StoreValue] = [.bytes([]), .bytes([0, 255, 0]), .null, .bytes(Array(repeating: 7, count: 3000))]
        let records: [StoreRecord] = (0..<700).map { index in
            var record: StoreRecord = [
                "label": labels[index % labels.count], "raw": raws[(index / 3) % raws.count],
                "secret": index % 5 == 0 ? .null : .text("secret \(index)"),
            ]
            if index % 7 != 0 { record["code"] = .bytes([UInt8(index % 256), UInt8(index / 256)]) }
            if index % 11 == 0 { record["id"] = .integer(Int64(10_000 + index)) }
            return record
        }
        let keys = try store.put(contentsOf: records, into: "things")
        #expect(Set(keys).count == records.count)
        for (record, key) in zip(records, keys) {
            let stored = try #require(try store.get("things", id: key))
            for field in ["label", "raw", "secret", "code"] {
                #expect(stored[field] ?? .null == record[field] ?? .null, "\(field) of \(key)")
            }
        }
        let found = try store.find("things", where: "code", equals: .bytes([42, 1]))
        #expect(found.map { $0["secret"] } == [.text("secret 298")])
    }

    @Test func theSeedsPresents() throws {
        let folder = try Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try Self.schema(), secret: Self.passphrase, kdf: Self.fast)
        let scarf = try store.put(
            ["to": .text("Grandma"), "description": .text("a knitted scarf"), "email": .text("Gran@Example.com")],
            into: "presents")
        try store.put(["to": .text("Grandma"), "description": .text("tea")], into: "presents")
        try store.put(["id": .integer(10), "to": .text("Sam"), "description": .text("a kite")], into: "presents")
        #expect(scarf == .integer(1))
        #expect(try store.find("presents", where: "to", equals: .text("Grandma")).count == 2)
        let found = try store.find("presents", where: "email", equals: .text("  gran@example.COM"))
        #expect(found.count == 1 && found.first?["description"] == .text("a knitted scarf"))
        #expect(try store.get("presents", id: .integer(10))?["description"] == .text("a kite"))
        #expect(try store.get("presents", id: .integer(11)) == nil)
        #expect(throws: CofferError(.refused, "")) {
            try store.put(["id": .integer(10), "to": .text("again")], into: "presents")
        }
        #expect(throws: CofferError(.invalidArgument, "")) {
            try store.find("presents", where: "description", equals: .text("tea"))
        }
        #expect(throws: CofferError(.invalidArgument, "")) { try store.put(["colour": .text("red")], into: "presents") }
        #expect(throws: CofferError(.invalidArgument, "")) { try store.put(["to": .integer(3)], into: "presents") }
        // A NUL would be cut off in a clear text column; in a sealed one it is kept.
        #expect(throws: CofferError(.invalidArgument, "")) { try store.put(["to": .text("a\u{0}b")], into: "presents") }
        let nul = try store.put(["to": .text("Ann"), "description": .text("a\u{0}b")], into: "presents")
        #expect(try store.get("presents", id: nul)?["description"] == .text("a\u{0}b"))
        // Opened again only with the passphrase.
        let reopened = try RecordStore.open(sqlite: folder.database, secret: Self.passphrase)
        #expect(try reopened.get("presents", id: scarf)?["email"] == .text("Gran@Example.com"))
        #expect(throws: CofferError(.wrongPassword, "")) {
            try RecordStore.open(sqlite: folder.database, secret: .password(Array("guess".utf8)))
        }
        #expect(
            try reopened.delete("presents", id: .integer(10)) && !(try reopened.delete("presents", id: .integer(10))))
        #expect(throws: CofferError(.refused, "")) {
            try RecordStore.create(sqlite: folder.database, schema: try Self.schema(), secret: Self.passphrase)
        }
    }

    /// An update seals every sealed field again and recomputes the indexes,
    /// so a changed bound field and a changed indexed value both hold.
    @Test func updatesSealAgain() throws {
        let folder = try Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try Self.schema(), secret: Self.passphrase, kdf: Self.fast)
        let id = try store.put(
            ["to": .text("Ann"), "description": .text("book"), "email": .text("ann@old.org")], into: "presents")
        let updated = try store.update("presents", id: id, set: ["to": .text("Bea"), "email": .text("bea@new.org")])
        #expect(updated?["description"] == .text("book") && updated?["to"] == .text("Bea"))
        #expect(try store.get("presents", id: id)?["to"] == .text("Bea"))
        #expect(try store.find("presents", where: "email", equals: .text("ann@old.org")).isEmpty)
        #expect(try store.find("presents", where: "email", equals: .text("BEA@new.org")).count == 1)
        #expect(try store.update("presents", id: id, set: ["email": .null])?["email"] == .null)
        #expect(try store.update("presents", id: .integer(99), set: ["to": .text("x")]) == nil)
        #expect(throws: CofferError(.invalidArgument, "")) {
            try store.update("presents", id: id, set: ["id": .integer(5)])
        }
        #expect(throws: CofferError(.invalidArgument, "")) { try store.update("presents", id: id, set: ["x": .null]) }
    }

    /// `verify` opens every cell and recomputes every index entry, and
    /// names the rows where either fails.
    @Test func verifyFindsWhatWasChanged() throws {
        let folder = try Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try Self.schema(), secret: Self.passphrase, kdf: Self.fast)
        for index in 0..<30 {
            try store.put(
                ["to": .text("p\(index)"), "description": .text("d\(index)"), "email": .text("e\(index)@x.org")],
                into: "presents")
        }
        try store.put(["to": .text("no email")], into: "presents")
        var seen: [Int] = []
        let intact = try store.verify(batchSize: 7) { seen.append($0) }
        #expect(intact.isIntact && intact.rows == 31 && intact.cells == 62 && intact.indexEntries == 30, "\(intact)")
        #expect(seen == [7, 14, 21, 28, 31])
        let queue = try DatabaseQueue(path: folder.database)
        try queue.write { db in
            let five = try Data.fetchOne(db, sql: "SELECT email_exact FROM presents WHERE id = 5")!
            try db.execute(sql: "UPDATE presents SET email_exact = ? WHERE id = 6", arguments: [five])
            try db.execute(sql: "UPDATE presents SET \"to\" = 'changed' WHERE id = 9")
            try db.execute(sql: "UPDATE presents SET email_exact = NULL WHERE id = 12")
        }
        let damaged = try store.verify()
        #expect(damaged.problemCount == 3, "\(damaged.problems)")
        #expect(damaged.problems.contains { $0.contains("id=6") && $0.contains("email_exact") })
        #expect(damaged.problems.contains { $0.contains("id=9") && $0.contains("does not open") })
        #expect(damaged.problems.contains { $0.contains("id=12") })
        #expect(!damaged.problems.joined().contains("d9") && !damaged.problems.joined().contains("e6@"))
    }

    /// With a 2-bit index most values collide; every find still returns
    /// exactly what a scan of the plaintext would.
    @Test func findsAreExactWhateverTheCollisions() throws {
        let folder = try Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try Self.schema(bits: 2), secret: Self.passphrase, kdf: Self.fast)
        var plain: [(id: StoreValue, email: String)] = []
        for index in 0..<120 {
            let email = "user\(index % 17)@example.org"
            let id = try store.put(
                ["to": .text("t\(index)"), "description": .text("d"), "email": .text(email)], into: "presents")
            plain.append((id, email))
        }
        for wanted in 0..<20 {
            let email = "User\(wanted)@Example.org "
            let expected = Set(
                plain.filter { $0.email == email.trimmingCharacters(in: .whitespaces).lowercased() }.map(\.id))
            let found = try store.find("presents", where: "email", equals: .text(email))
            #expect(Set(found.compactMap { $0["id"] }) == expected, "\(email)")
        }
        // Null sealed values are found too (no index entry).
        try store.put(["to": .text("nobody")], into: "presents")
        #expect(try store.find("presents", where: "email", equals: .null).map { $0["to"] } == [.text("nobody")])
    }

    /// No byte string of a sealed value is anywhere in the database files,
    /// before or after deletes, a checkpoint and a vacuum.
    @Test func noSealedPlaintextOnDisk() throws {
        let folder = try Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try Self.schema(), secret: Self.passphrase, kdf: Self.fast)
        var secrets: [String] = []
        for index in 0..<50 {
            let secret = "sealed-secret-\(index)-\(UUID().uuidString)"
            secrets.append(secret)
            try store.put(
                ["to": .text("r\(index)"), "description": .text(secret), "email": .text(secret + "@x.org")],
                into: "presents")
        }
        func scan(_ moment: String) throws {
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(files.contains("store.sqlite"))
            for file in files {
                guard let bytes = try Self.bytesReadElsewhere(folder.path + "/" + file) else { continue }
                for secret in secrets {
                    #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(moment): \(file) holds a sealed value")
                    #expect(bytes.range(of: Data(secret.lowercased().utf8)) == nil)
                }
            }
        }
        try scan("after puts")
        // The clear fields are there: the scan can find what it looks for.
        let whole = try #require(try Self.bytesReadElsewhere(folder.database + "-wal"))
        #expect(whole.range(of: Data("r49".utf8)) != nil)
        for index in 0..<25 { try store.delete("presents", id: .integer(Int64(index + 1))) }
        let queue = try DatabaseQueue(path: folder.database)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            try db.execute(sql: "VACUUM")
        }
        try scan("after delete, checkpoint and vacuum")
    }

    /// A cell moved to another row, a changed bound field, or garbage in a
    /// sealed or index column: a clear error, never a wrong value or a crash.
    @Test func cellsOpenOnlyInTheirOwnRow() throws {
        let folder = try Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try Self.schema(), secret: Self.passphrase, kdf: Self.fast)
        try store.put(["to": .text("Ann"), "description": .text("book")], into: "presents")
        try store.put(["to": .text("Ann"), "description": .text("lamp")], into: "presents")
        try store.put(["to": .text("Bob"), "description": .text("fountain-pen-7f")], into: "presents")
        let queue = try DatabaseQueue(path: folder.database)
        // Swap the descriptions of rows 1 and 2 (same "to"): the primary key is bound.
        try queue.write { db in
            let one = try Data.fetchOne(db, sql: "SELECT description FROM presents WHERE id = 1")!
            let two = try Data.fetchOne(db, sql: "SELECT description FROM presents WHERE id = 2")!
            try db.execute(sql: "UPDATE presents SET description = ? WHERE id = 1", arguments: [two])
            try db.execute(sql: "UPDATE presents SET description = ? WHERE id = 2", arguments: [one])
        }
        #expect(throws: CofferError(.payloadAuthenticationFailed, "")) { try store.get("presents", id: .integer(1)) }
        // Change a bound clear field: "to" is bound to the description.
        try queue.write { db in try db.execute(sql: "UPDATE presents SET \"to\" = 'Eve' WHERE id = 3") }
        do {
            _ = try store.get("presents", id: .integer(3))
            Issue.record("a row whose bound field changed still opened")
        } catch let error as CofferError {
            #expect(error.code == .payloadAuthenticationFailed)
            #expect(error.description.contains("presents.description") && !error.description.contains("fountain"))
        }
        // STRICT tables keep text and integers out of sealed columns; bytes and null get in.
        #expect(throws: DatabaseError.self) {
            try queue.write { db in try db.execute(sql: "UPDATE presents SET description = 'text' WHERE id = 3") }
        }
        for garbage: DatabaseValue in [Data([1, 2, 3]).databaseValue, Data(count: 64).databaseValue, .null] {
            try queue.write { db in
                try db.execute(
                    sql: "UPDATE presents SET description = ?, email_exact = ? WHERE id = 3",
                    arguments: [garbage, garbage])
            }
            #expect(throws: CofferError.self) { try store.get("presents", id: .integer(3)) }
        }
        // Garbage in an index column is no candidate; a damaged candidate row is an error, not a skipped row.
        #expect(try store.find("presents", where: "email", equals: .text("x")).isEmpty)
        #expect(throws: CofferError.self) { try store.find("presents", where: "email", equals: .null) }
    }
}
