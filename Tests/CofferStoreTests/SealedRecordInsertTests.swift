import Coffer
import CofferStore
import Foundation
import Synchronization
import Testing

/// A typed put hands the assigned key to the record (didInsert) without
/// decoding it again, and a typed update writes the type's fields, a nil
/// optional as null, the rest of the row kept.
@Suite(.serialized) struct SealedRecordInsertTests {
    static let decodings = Mutex(0)

    struct Counted: SealedRecord, Equatable {
        static let storeTable = "notes"
        var id: Int64?
        var title: String
        var tag: String?
        init(id: Int64? = nil, title: String, tag: String? = nil) {
            self.id = id
            self.title = title
            self.tag = tag
        }
        init(from decoder: any Decoder) throws {
            SealedRecordInsertTests.decodings.withLock { $0 += 1 }
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decodeIfPresent(Int64.self, forKey: .id)
            title = try container.decode(String.self, forKey: .title)
            tag = try container.decodeIfPresent(String.self, forKey: .tag)
        }
        mutating func didInsert(_ inserted: StoreInsertion) { id = inserted.id.integerValue }
    }

    /// The same table, the default didInsert: decoded once more.
    struct Plain: SealedRecord, Equatable {
        static let storeTable = "notes"
        var id: Int64?
        var title: String
    }

    @Test func aPutTakesItsKeyWithoutDecodingAndAnUpdateWritesTheTypesFields() throws {
        let folder = try RecordStoreTests.Folder()
        let schema = try StoreSchema(tables: [
            .init(
                name: "notes", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer), .init(name: "title", type: .text),
                    .init(name: "tag", type: .text, sealed: true), .init(name: "extra", type: .text),
                ])
        ])
        let store = try RecordStore.create(
            sqlite: folder.database, schema: schema, secret: RecordStoreTests.passphrase, kdf: RecordStoreTests.fast,
            rollbackGuard: nil)
        Self.decodings.withLock { $0 = 0 }
        let first = try store.put(Counted(title: "a", tag: "t"))
        let given = try store.put(Counted(id: 10, title: "b"))
        #expect(first.id == 1 && given.id == 10)
        #expect(Self.decodings.withLock { $0 } == 0, "a put decoded the record again")
        #expect(try store.put(Plain(id: nil, title: "c")).id == 11)  // the default: decoded

        try store.update("notes", id: 1, set: ["extra": "kept"])
        var changed = first
        changed.title = "a2"
        changed.tag = nil
        #expect(try store.update(changed))
        #expect(try store.get("notes", id: 1) == ["id": 1, "title": "a2", "tag": .null, "extra": "kept"])
        #expect(try store.update(Counted(id: 99, title: "none")) == false)
    }
}
