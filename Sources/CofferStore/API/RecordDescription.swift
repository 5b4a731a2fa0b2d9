import Coffer

extension StoreValue {
    /// The value itself, for a field the schema keeps clear: text quoted as
    /// Swift would, an integer or a double in decimal, a date in ISO 8601,
    /// bytes in hex.
    var clearDescription: String {
        switch storage {
        case .text(let text): text.debugDescription
        case .integer(let number) where type == .date: StoreSchema.FieldType.iso8601(milliseconds: number)
        case .integer(let number): String(number)
        case .double(let number): number.description
        case .bytes(let bytes): "0x" + Hex.encode(bytes)
        case .null: "null"
        }
    }
}

extension StoreSchema {
    /// `record` as text for logs and debugging: the primary key and clear
    /// fields with their values, sealed fields (and fields `table` does not
    /// have, which could be anything) redacted to their kind and length,
    /// fields in name order.
    ///
    /// ```swift
    /// print(store.schema.description(of: record, in: "presents"))
    /// // ["description": StoreValue.text(<15 bytes>), "id": 1, "toWhom": "Grandma"]
    /// ```
    ///
    /// A ``StoreValue`` printed alone is always redacted: it does not know
    /// which field it came from.
    public func description(of record: StoreRecord, in tableName: String) -> String {
        let table = try? self.table(tableName)
        let fields = record.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        let parts = fields.map { name -> String in
            let value = record[name] ?? .null
            let clear = table.map { name == $0.primaryKey || $0.field(name).map { !$0.sealed } == true } ?? false
            return name.debugDescription + ": " + (clear ? value.clearDescription : value.description)
        }
        return "[" + parts.joined(separator: ", ") + "]"
    }

    /// A typed record as text, as `description(of:in:)` shows a record of
    /// its table: clear fields with their values, sealed ones redacted.
    /// (Swift's own `print(present)` shows every property: log this
    /// instead.)
    ///
    /// ```swift
    /// logger.debug("stored \(store.schema.description(of: present))")
    /// // Present["description": StoreValue.text(<15 bytes>), "id": 1, "toWhom": "Grandma"]
    /// ```
    public func description<R: SealedRecord>(of record: R) -> String {
        guard let fields = try? record.storeRecord() else { return "\(R.self)(<not encodable>)" }
        return "\(R.self)" + description(of: fields, in: R.storeTable)
    }
}
