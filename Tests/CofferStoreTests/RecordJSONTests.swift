import Coffer
import CofferStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Records' JSON as a library: one object in and one line out for every
/// field type, the refusals naming the field, and JSON lines put batch by
/// batch from a file, a bad first line refused before the store is opened.
@Suite struct RecordJSONTests {
    static let table = StoreSchema.Table(
        name: "notes", primaryKey: "id",
        fields: [
            .init(name: "id", type: .integer), .init(name: "title", type: .text),
            .init(name: "createdAt", type: .date), .init(name: "score", type: .double),
            .init(name: "raw", type: .bytes), .init(name: "body", type: .text, sealed: true),
        ])

    @Test func eachTypeGoesInAndComesOutInItsJSONForm() throws {
        let line =
            #"{"id":7,"title":"Lunch \"at\" noon\n","createdAt":"2026-11-28T12:00:00.250Z","score":-0.1,"raw":"AAH/","body":null}"#
        let record = try RecordJSON.record(line, table: Self.table)
        #expect(record["id"] == 7 && record["title"] == "Lunch \"at\" noon\n" && record["body"] == .null)
        #expect(record["createdAt"] == .date(milliseconds: 1_795_867_200_250))
        #expect(record["score"] == -0.1 && record["raw"] == .bytes([0, 1, 255]))
        #expect(RecordJSON.line(record, table: Self.table) == line)
        // Milliseconds and an offset are taken for a date; an integer for a double.
        let other = try RecordJSON.record(
            #"{"createdAt": "2026-11-28T13:00:00.250+01:00", "score": 2}"#, table: Self.table)
        #expect(other["createdAt"] == record["createdAt"] && other["score"] == 2.0)
        #expect(
            try RecordJSON.record(#"{"createdAt": 1795867200250}"#, table: Self.table)["createdAt"]
                == record["createdAt"])
        for (json, says) in [
            (#"{"colour": 1}"#, "notes has no field colour"),
            (#"{"id": 1, "id": 2}"#, "notes.id is given twice"),
            (#"{"score": "1"}"#, "notes.score takes a JSON number"),
            (#"{"createdAt": true}"#, "notes.createdAt takes an ISO 8601 date string"),
            (#"{"raw": "not base64!"}"#, "notes.raw takes a base64 JSON string"),
            (#"{"id": 1.5}"#, "notes.id takes a JSON integer"),
            (#"{"title": "x"} x"#, "something follows the object"),
            (#"{"title": "\ud800"}"#, "half a surrogate pair"),
        ] {
            #expect(throws: CofferError.self, "\(json)") { try RecordJSON.record(json, table: Self.table) }
            do { _ = try RecordJSON.record(json, table: Self.table) } catch {
                #expect("\(error)".contains(says), "\(json): \(error)")
            }
        }
        #expect(throws: CofferError.self) { try RecordJSON.object(utf8: [0x7B, 0xFF, 0x7D]) }
    }

    static func openForReading(_ path: String) -> Int32 { open(path, O_RDONLY) }

    @Test func jsonLinesArePutInBatchesAndABadFirstLineStopsBeforeTheStoreOpens() throws {
        let folder = try RecordStoreTests.Folder()
        let schema = try StoreSchema(tables: [Self.table])
        try RecordStore.create(
            sqlite: folder.database, schema: schema, secret: RecordStoreTests.passphrase, kdf: RecordStoreTests.fast,
            rollbackGuard: nil
        ).close()
        func open() throws -> RecordStore {
            try RecordStore.open(sqlite: folder.database, secret: RecordStoreTests.passphrase, rollbackGuard: nil)
        }
        func put(_ text: String, batch: Int, open: () throws -> RecordStore) throws -> (Int, [[StoreValue]]) {
            let path = folder.path + "/lines.json"
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            let descriptor = Self.openForReading(path)
            defer { close(descriptor) }
            var batches: [[StoreValue]] = []
            let stored = try RecordJSONLines(batch: batch).put(
                from: FileDescriptorSource(fileDescriptor: descriptor), regularFile: true, into: "notes", open: open
            ) { batches.append($0) }
            return (stored, batches)
        }
        let lines = (1...5).map { #"{"title": "note \#($0)", "score": \#($0).5, "body": "sealed \#($0)"}"# }
        let (stored, batches) = try put(lines.joined(separator: "\n") + "\n", batch: 2, open: open)
        #expect(stored == 5 && batches.map(\.count) == [2, 2, 1])
        let store = try open()
        #expect(try store.get("notes", id: 5)?["body"] == "sealed 5")
        try store.close()

        var opened = false
        #expect(throws: CofferError.self) {
            try put("{oops\n" + lines[0] + "\n", batch: 2) {
                opened = true
                return try open()
            }
        }
        #expect(!opened, "the store was opened for a file whose first line is malformed")
        do {
            _ = try put(lines[0] + "\n" + lines[1] + "\n{\"score\": \"x\"}\n", batch: 1, open: open)
            Issue.record("a bad third line was taken")
        } catch {
            #expect("\(error)".contains("line 3"), "\(error)")
        }
        let again = try open()
        #expect(try again.fetchCount(StoreQuery("notes")) == 7)  // the two lines before it
    }
}
