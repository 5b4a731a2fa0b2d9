import Coffer
import CofferStore
import Foundation
import Testing

/// A schema declared on the record type (SchemaRecord): fields and their
/// types read from the type, sealing by coding key, the check at open that
/// names the field that drifted, and typed columns in queries.
@Suite struct RecordSchemaTests {
    enum Kind: String, Codable, CaseIterable, Sendable { case idea, list }
    enum Priority: Int, Codable, CaseIterable, Sendable {
        case low = 1
        case high = 2
    }

    struct Note: SchemaRecord, Equatable {
        static let storeTable = "notes"
        static let storeSchema = RecordSchema(
            primaryKey: CodingKeys.id,
            .sealed(CodingKeys.body, bind: [CodingKeys.title]),
            .sealed(CodingKeys.tag, indexes: [.init(name: "tag_exact", transforms: [.trim, .lowercase], bits: 16)]))
        var id: Int64?
        var title: String
        var body: String
        var tag: String?
        var createdAt: Date
        var score: Double
        var kind: Kind
        var priority: Priority?
        var pinned: Bool
        var attachment: Data?

        /// Declared (not synthesized, which is private) so that queries
        /// outside the type name its columns.
        enum CodingKeys: String, CodingKey {
            case id, title, body, tag, createdAt, score, kind, priority, pinned, attachment
        }
    }

    static func note(_ title: String, at seconds: Double, tag: String? = "Work") -> Note {
        Note(
            id: nil, title: title, body: "body of \(title)", tag: tag,
            createdAt: Date(timeIntervalSince1970: seconds), score: 2.5, kind: .list, priority: .high, pinned: false,
            attachment: Data([1, 2]))
    }

    @Test func theTableIsReadFromTheType() throws {
        let table = try StoreSchema.Table(record: Note.self)
        #expect(table.name == "notes" && table.primaryKey == "id")
        #expect(
            table.fields.map { "\($0.name):\($0.type.name)\($0.sealed ? ":sealed" : "")" } == [
                "id:integer", "title:text", "body:text:sealed", "tag:text:sealed", "createdAt:date", "score:double",
                "kind:text", "priority:integer", "pinned:integer", "attachment:bytes",
            ])
        #expect(table.field("body")?.bind == ["title"])
        #expect(table.field("tag")?.indexes.map(\.name) == ["tag_exact"])
    }

    @Test func aStoreMadeFromTheTypesKeepsThemAndTypedColumnsQueryIt() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try RecordStore.open(
            orCreate: folder.database, records: [Note.self], secret: .password("pw"), kdf: RecordStoreTests.fast,
            rollbackGuard: nil)
        let first = try store.put(Self.note("Shop", at: 1_000))
        let second = try store.put(Self.note("Shopping list", at: 2_000.5, tag: nil))
        #expect(try store.get(Note.self, id: .integer(first.id!)) == first)
        typealias Keys = Note.CodingKeys
        #expect(try store.fetchAll(Note.self, Note.query.filter(Keys.title, equals: "Shop")) == [first])
        #expect(try store.fetchAll(Note.self, Note.query.filter(Keys.tag, equals: " work ")) == [first])
        #expect(
            try store.fetchAll(Note.self, Note.query.order(by: Keys.createdAt, descending: true)) == [second, first])
        #expect(
            try store.fetchAll(
                Note.self, Note.query.filter(StoreColumn(Keys.createdAt) > .date(Date(timeIntervalSince1970: 1_500))))
                == [second])
        try store.close()
        // Opened again with the types: they match.
        let again = try RecordStore.open(
            sqlite: folder.database, secret: .password("pw"), records: [Note.self], rollbackGuard: nil)
        #expect(try again.fetchCount(Note.self) == 2)
    }

    /// The same table as the app's next version declares it, drifted.
    struct NoteWithColour: SchemaRecord {
        static let storeTable = "notes"
        static let storeSchema = RecordSchema(
            primaryKey: CodingKeys.id, .sealed(CodingKeys.body, bind: [CodingKeys.title]))
        var id: Int64?
        var title: String
        var body: String
        var colour: String
    }
    struct NoteWithClearBody: SchemaRecord {
        static let storeTable = "notes"
        static let storeSchema = RecordSchema(primaryKey: CodingKeys.id)
        var id: Int64?
        var body: String
    }
    struct NoteWithNumberTitle: SchemaRecord {
        static let storeTable = "notes"
        static let storeSchema = RecordSchema(primaryKey: CodingKeys.id)
        var id: Int64?
        var title: Int
    }
    struct NoteWithOtherIndex: SchemaRecord {
        static let storeTable = "notes"
        static let storeSchema = RecordSchema(
            primaryKey: CodingKeys.id, .sealed(CodingKeys.tag, indexes: [.init(name: "tag_exact", bits: 16)]))
        var id: Int64?
        var tag: String?
    }

    @Test func aTypeThatDriftedFromTheStoreIsRefusedAtOpenNamingTheField() throws {
        let folder = try RecordStoreTests.Folder()
        try RecordStore.open(
            orCreate: folder.database, records: [Note.self], secret: .password("pw"), kdf: RecordStoreTests.fast,
            rollbackGuard: nil
        ).close()
        for (type, says) in [
            (
                NoteWithColour.self,
                "NoteWithColour.colour does not match the store's notes: the table has no such field"
            ),
            (NoteWithClearBody.self, "NoteWithClearBody.body does not match the store's notes: the store seals it"),
            (
                NoteWithNumberTitle.self,
                "NoteWithNumberTitle.title does not match the store's notes: the property is stored as integer, the field holds text"
            ),
            (NoteWithOtherIndex.self, "NoteWithOtherIndex.tag does not match the store's notes: its indexes are"),
        ] as [(any SchemaRecord.Type, String)] {
            do {
                _ = try RecordStore.open(
                    sqlite: folder.database, secret: .password("pw"), records: [type], rollbackGuard: nil)
                Issue.record("\(type) was taken")
            } catch let error as CofferError {
                #expect(error.code == .invalidArgument)
                #expect(error.description.hasPrefix(says), "\(error)")
            }
        }
    }

    struct Nested: SchemaRecord {
        struct Point: Codable { var x = 0 }
        static let storeTable = "t"
        static let storeSchema = RecordSchema(primaryKey: CodingKeys.id)
        var id: Int64?
        var point: Point
    }
    struct Listed: SchemaRecord {
        static let storeTable = "t"
        static let storeSchema = RecordSchema(primaryKey: CodingKeys.id)
        var id: Int64?
        var tags: [String]
    }
    enum Mood: String, Codable { case calm }
    struct Moody: SchemaRecord {
        static let storeTable = "t"
        static let storeSchema = RecordSchema(primaryKey: CodingKeys.id)
        var id: Int64?
        var mood: Mood
    }
    struct SealsNothing: SchemaRecord {
        static let storeTable = "t"
        static let storeSchema = RecordSchema(primaryKey: CodingKeys.id, .sealed(CodingKeys.missing))
        enum CodingKeys: String, CodingKey { case id, missing }
        var id: Int64?
        init(from decoder: any Decoder) throws {
            id = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(Int64.self, forKey: .id)
        }
        func encode(to encoder: any Encoder) throws {}
    }

    @Test func whatAFieldCannotHoldIsSaidByName() {
        for (type, says) in [
            (Nested.self, "point is a structure"),
            (Listed.self, "tags is a list"),
            (Moody.self, "make it CaseIterable"),
            (SealsNothing.self, "seals missing, which SealsNothing does not decode"),
        ] as [(any SchemaRecord.Type, String)] {
            do {
                _ = try StoreSchema(records: [type])
                Issue.record("\(type) was taken")
            } catch let error as CofferError {
                #expect(error.description.contains(says), "\(error)")
            } catch { Issue.record("\(error)") }
        }
    }

    /// A date field is never read into a Double or an integer (its
    /// milliseconds would read as a number), nor a double into an integer
    /// or text: each is an error naming the field.
    struct NoteReadWrong: SealedRecord {
        static let storeTable = "notes"
        var id: Int64?
        var createdAt: Double
    }
    struct NoteDateAsInteger: SealedRecord {
        static let storeTable = "notes"
        var id: Int64?
        var createdAt: Int64
    }
    struct NoteScoreAsText: SealedRecord {
        static let storeTable = "notes"
        var id: Int64?
        var score: String
    }
    struct NoteScoreAsInteger: SealedRecord {
        static let storeTable = "notes"
        var id: Int64?
        var score: Int
    }

    @Test func anIntegerFieldIsNotReadIntoADouble() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try RecordStore.open(
            orCreate: folder.database, records: [Note.self], secret: .password("pw"), kdf: RecordStoreTests.fast,
            rollbackGuard: nil)
        let note = try store.put(Self.note("x", at: 5))
        let id = StoreValue.integer(note.id!)
        for (read, field) in [
            ({ _ = try store.get(NoteReadWrong.self, id: id) }, "notes.createdAt holds date"),
            ({ _ = try store.get(NoteDateAsInteger.self, id: id) }, "notes.createdAt holds date"),
            ({ _ = try store.get(NoteScoreAsText.self, id: id) }, "notes.score holds double"),
            ({ _ = try store.get(NoteScoreAsInteger.self, id: id) }, "notes.score holds double"),
        ] as [(() throws -> Void, String)] {
            do {
                try read()
                Issue.record("\(field) was read as another type")
            } catch let error as CofferError {
                #expect(error.description.contains(field), "\(error)")
            }
        }
        #expect(try store.get(Note.self, id: id)?.score == 2.5)
    }
}
