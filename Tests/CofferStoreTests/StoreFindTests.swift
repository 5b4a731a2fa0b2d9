import Coffer
import CofferStore
import Foundation
import Testing

/// Finds on several fields: a compound index over two sealed fields, clear
/// conditions in SQL, and answers equal to a scan of the plaintext.
@Suite struct StoreFindTests {
    static func schema() throws -> StoreSchema {
        try StoreSchema(tables: [
            .init(
                name: "patients", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer),
                    .init(name: "clinic", type: .text),
                    .init(
                        name: "status", type: .text, sealed: true,
                        indexes: [.init(name: "status_last4", transforms: [.trim], bits: 3, with: ["last4"])]),
                    .init(name: "last4", type: .text, sealed: true, indexes: [.init(name: "last4_exact", bits: 2)]),
                ])
        ])
    }

    @Test func compoundAndClearConditionsAreExact() throws {
        let folder = try RecordStoreTests.Folder()
        let store = try RecordStore.create(
            sqlite: folder.database, schema: try Self.schema(), secret: RecordStoreTests.passphrase,
            kdf: RecordStoreTests.fast)
        var plain: [(id: StoreValue, clinic: String, status: String, last4: String)] = []
        for index in 0..<150 {
            let row = (
                clinic: "c\(index % 3)", status: index % 2 == 0 ? "positive" : "negative", last4: "\(1000 + index % 20)"
            )
            let id = try store.put(
                ["clinic": .text(row.clinic), "status": .text(" " + row.status), "last4": .text(row.last4)],
                into: "patients")
            plain.append((id, row.clinic, row.status, row.last4))
        }
        for status in ["positive", "negative"] {
            for last4 in ["1000", "1003", "1019", "9999"] {
                let both = try store.find("patients", where: ["status": .text(status + "  "), "last4": .text(last4)])
                #expect(
                    Set(both.compactMap { $0["id"] })
                        == Set(plain.filter { $0.status == status && $0.last4 == last4 }.map(\.id)),
                    "\(status) \(last4)")
                let three = try store.find(
                    "patients", where: ["status": .text(status), "last4": .text(last4), "clinic": .text("c1")])
                #expect(
                    Set(three.compactMap { $0["id"] })
                        == Set(plain.filter { $0.status == status && $0.last4 == last4 && $0.clinic == "c1" }.map(\.id))
                )
            }
        }
        // last4 alone has its own index; status alone has none.
        #expect(
            try store.find("patients", where: ["last4": .text("1007")]).count
                == plain.filter { $0.last4 == "1007" }.count)
        #expect(throws: CofferError(.invalidArgument, "")) {
            try store.find("patients", where: ["status": .text("positive")])
        }
        #expect(throws: CofferError(.invalidArgument, "")) { try store.find("patients", where: [:]) }
        #expect(throws: CofferError(.invalidArgument, "")) { try store.find("patients", where: ["age": .integer(3)]) }
        #expect(try store.find("patients", where: ["clinic": .text("c2")]).count == 50)
    }
}
