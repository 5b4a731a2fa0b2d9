import Coffer
import CofferStore
import Foundation
import Testing

/// A clear double and a clear date field sealed in place, half way and
/// to the end, on SQLite (the clear values kept in a column of any type)
/// and PostgreSQL (the column rewritten as each value's encoding by
/// `float8send` and `int8send`): every value opens as it was written.
@Suite struct StoreTypeMigrationTests {
    typealias Backend = StoreQueryTests.Backend

    @Test(arguments: Backend.allCases) func doublesAndDatesAreSealedInPlace(_ backend: Backend) throws {
        guard StoreQueryTests.enabled(backend) else { return }
        let folder = try RecordStoreTests.Folder()
        let schema = try StoreSchema(tables: [
            .init(
                name: "readings", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer), .init(name: "score", type: .double),
                    .init(name: "taken", type: .date),
                ])
        ])
        let store = try StoreQueryTests.store(schema, on: backend, in: folder, name: "typemigration")
        var written: [StoreValue: StoreRecord] = [:]
        for index in 0..<24 {
            let record: StoreRecord = [
                "score": index % 7 == 6 ? .null : .double(Double(index) * -1.375 + 0.1),
                "taken": .date(milliseconds: Int64(index - 12) * 86_400_001),
            ]
            written[try store.put(record, into: "readings")] = record
        }
        func check(_ moment: String) throws {
            for (key, record) in written {
                let stored = try #require(try store.get("readings", id: key), "\(moment)")
                #expect(stored["score"] == record["score"] && stored["taken"] == record["taken"], "\(key) \(moment)")
            }
        }
        #expect(throws: StoreJobTests.Stop.self) {
            try store.migrate("readings", field: "score", batchSize: 5) { _ in throw StoreJobTests.Stop() }
        }
        try check("half way")
        try store.migrate("readings", field: "score", batchSize: 5)
        try store.migrate("readings", field: "taken", batchSize: 5)
        try check("sealed")
        let verification = try store.verify()
        #expect(verification.isIntact && verification.cells == 48, "\(verification)")
    }
}
