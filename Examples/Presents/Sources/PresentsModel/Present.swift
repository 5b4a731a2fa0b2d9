import CofferStore

/// One present on the list: who it is for stays clear (the list is
/// ordered and searched by it), what it is stays sealed.
public struct Present: SealedRecord, Identifiable, Hashable {
    public static let storeTable = "presents"

    /// Given by the store when the present is added.
    public var id: Int64?
    public var toWhom: String
    public var description: String

    public init(id: Int64? = nil, toWhom: String, description: String) {
        self.id = id
        self.toWhom = toWhom
        self.description = description
    }
}
