import CofferStore
import Foundation

/// A private note: its title is clear (listed, searched and ordered by the
/// database), its body and tag are sealed, the tag found through a blind
/// index whatever its case and spaces. The schema is the type's own.
public struct Note: SchemaRecord, Identifiable, Hashable {
    public static let storeTable = "notes"
    public static let storeSchema = RecordSchema(
        primaryKey: CodingKeys.id,
        .sealed(CodingKeys.body, bind: [CodingKeys.title]),
        .sealed(CodingKeys.tag, indexes: [.init(name: "tag_exact", transforms: [.trim, .lowercase], bits: 16)]))

    /// Given by the store when the note is added.
    public var id: Int64?
    public var title: String
    public var body: String
    public var tag: String?
    /// Kept to the millisecond (finer parts are dropped when stored).
    public var createdAt: Date

    public init(id: Int64? = nil, title: String, body: String, tag: String? = nil, createdAt: Date = Date()) {
        self.id = id
        self.title = title
        self.body = body
        self.tag = tag
        self.createdAt = createdAt
    }

    /// The columns, named for queries.
    public enum CodingKeys: String, CodingKey { case id, title, body, tag, createdAt }
}
