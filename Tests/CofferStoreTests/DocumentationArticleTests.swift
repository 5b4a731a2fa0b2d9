import Coffer
import CofferStore
import Foundation
import Testing

/// The record type of the article "A typed record store", as it declares it.
struct Note: SchemaRecord {
    static let storeTable = "notes"
    static let storeSchema = RecordSchema(
        primaryKey: CodingKeys.id,
        .sealed(CodingKeys.body, bind: [CodingKeys.title]),
        .sealed(CodingKeys.email, indexes: [.init(name: "email_exact", transforms: [.trim, .lowercase], bits: 16)]))
    var id: Int64?  // given by the store on the first put
    var title: String  // clear: ordered and searched by the database
    var body: String  // sealed, and bound to the title
    var email: String  // sealed, found through a blind index
    var pages: Int
    var createdAt: Date
}

/// The code of CofferStore's DocC articles (Sources/CofferStore/CofferStore.docc),
/// run as written: scripts/check-article-code fails when an article's block
/// is not found here line for line.
@Suite struct DocumentationArticleTests {
    @Test func aTypedRecordStore() async throws {
        let folder = try RecordStoreTests.Folder()
        let path = folder.path + "/notes.sqlite"
        var shown: [[Note]] = []
        func show(_ notes: [Note]) { shown.append(notes) }

        // Open, put, change
        let store = try await RecordStore.open(
            orCreate: path, records: [Note.self], secret: .password("correct horse battery staple"))
        var note = Note(
            id: nil, title: "Groceries", body: "eggs, flour", email: "ann@example.com", pages: 1, createdAt: Date())
        note = try await store.put(note)
        note.body = "eggs, flour, butter"
        _ = try await store.update(note)
        let again = try await store.get(Note.self, id: .integer(note.id!))
        #expect(again?.body == "eggs, flour, butter")

        // Query
        let recent = try await store.fetchAll(
            Note.self,
            Note.query
                .filter(StoreColumn("pages") >= 1 && StoreColumn("title").hasPrefix("Gro"))
                .order(by: "createdAt", descending: true)
                .limit(20))
        let hers = try await store.fetchAll(Note.self, Note.query.filter("email", equals: " ANN@example.com"))
        let howMany = try await store.fetchCount(Note.self)
        #expect(recent.map(\.id) == [note.id])
        #expect(hers.map(\.id) == [note.id])
        #expect(howMany == 1)
        // A range over a sealed field is refused.
        await #expect(throws: CofferError.self) {
            _ = try await store.fetchAll(Note.self, Note.query.filter(StoreColumn("email") > "a"))
        }

        // Keep a screen up to date: a second note comes while the loop waits.
        let writer = Task {
            try await Task.sleep(for: .milliseconds(200))
            _ = try await store.put(
                Note(id: nil, title: "Books", body: "a novel", email: "bo@example.com", pages: 3, createdAt: Date()))
        }
        for try await notes in store.observe(Note.self, Note.query.order(by: "title")) {
            show(notes)
            if notes.count >= 2 { break }
        }
        try await writer.value
        #expect(shown.last?.map(\.title) == ["Books", "Groceries"])

        // Change the password, keep a recovery key
        _ = try await store.changeSecret(to: .password("a new passphrase"))
        let recovery = try await store.addRecoveryKey()
        let toWriteDown = recovery.text  // shown to the user once; opens the store if the password is lost

        // Check it
        let report = try await store.verify()
        if !report.isIntact { print(report) }
        #expect(report.isIntact)
        try store.close()

        // The old password no longer opens; the new one and the recovery key do.
        #expect(throws: CofferError.self) {
            _ = try RecordStore.open(sqlite: path, secret: .password("correct horse battery staple"))
        }
        try await RecordStore.open(sqlite: path, secret: .password("a new passphrase")).close()
        try await RecordStore.open(sqlite: path, secret: try RecoveryKey(text: toWriteDown).unlockSecret).close()
    }
}
