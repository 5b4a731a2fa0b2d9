import Coffer
import CofferStore
import Crypto
import Foundation
import Testing

@Suite struct StoreSchemaTests {
    /// The schema file of issue 9's example parses, with defaults for what it leaves out.
    @Test func theDocumentedShapeParses() throws {
        let json = """
            {"tables": [{"name": "presents", "primaryKey": "id",
              "fields": [{"name": "id", "type": "integer"},
                         {"name": "to", "type": "text"},
                         {"name": "description", "type": "text", "sealed": true, "bind": ["to"]},
                         {"name": "email", "type": "text", "sealed": true,
                          "indexes": [{"name": "email_exact", "transforms": ["trim", "lowercase"], "bits": 16}]}]}]}
            """
        let schema = try StoreSchema(json: Data(json.utf8))
        let table = try schema.table("presents")
        #expect(table.primaryKey == "id" && table.fields.count == 4)
        #expect(table.field("to")?.sealed == false && table.field("description")?.bind == ["to"])
        let index = try #require(table.field("email")?.indexes.first)
        #expect(index.bits == 16 && index.transforms.map(\.description) == ["trim", "lowercase"])
        // It writes back to the same shape.
        let again = try StoreSchema(json: try JSONEncoder().encode(schema))
        #expect(
            try again.table("presents").field("email")?.indexes.first?.transforms.map(\.description) == [
                "trim", "lowercase",
            ])
    }

    @Test func mistakesAreNamed() throws {
        func schema(_ fields: String, primaryKey: String = "id", table: String = "t") -> Data {
            Data(
                "{\"tables\": [{\"name\": \"\(table)\", \"primaryKey\": \"\(primaryKey)\", \"fields\": [\(fields)]}]}"
                    .utf8)
        }
        let id = "{\"name\": \"id\", \"type\": \"integer\"}"
        let cases: [(Data, String)] = [
            (schema(id, primaryKey: "nope"), "primary key"),
            (schema(id + ", {\"name\": \"id\", \"type\": \"text\"}"), "two fields"),
            (schema("{\"name\": \"id\", \"type\": \"integer\", \"sealed\": true}"), "primary key"),
            (schema(id + ", {\"name\": \"a\", \"type\": \"text\", \"bind\": [\"id\"]}"), "not sealed"),
            (
                schema(id + ", {\"name\": \"a\", \"type\": \"text\", \"sealed\": true, \"bind\": [\"b\"]}"),
                "not a clear field"
            ),
            (
                schema(id + ", {\"name\": \"a\", \"type\": \"text\", \"indexes\": [{\"name\": \"i\", \"bits\": 8}]}"),
                "needs no blind index"
            ),
            (
                schema(
                    id
                        + ", {\"name\": \"a\", \"type\": \"text\", \"sealed\": true, \"indexes\": [{\"name\": \"i\", \"bits\": 65}]}"
                ), "1 to 64"
            ),
            (
                schema(
                    id
                        + ", {\"name\": \"a\", \"type\": \"text\", \"sealed\": true, \"indexes\": [{\"name\": \"id\", \"bits\": 8}]}"
                ), "name of another"
            ),
            (
                schema(
                    id
                        + ", {\"name\": \"a\", \"type\": \"text\", \"sealed\": true, \"indexes\": [{\"name\": \"i\", \"bits\": 8, \"transforms\": [\"upper\"]}]}"
                ), "unknown index transform"
            ),
            (
                schema(
                    id + #", {"name": "a", "type": "text", "sealed": true, "indexes": [{"name": "i", "bits": 33}]}"#),
                "acceptLeakage"
            ),
            (
                schema(
                    id
                        + #", {"name": "a", "type": "text", "sealed": true, "indexes": [{"name": "i", "bits": 40, "acceptLeakage": "  "}]}"#
                ), "acceptLeakage"
            ),
            (
                schema(
                    id
                        + #", {"name": "a", "type": "text", "sealed": true, "indexes": [{"name": "i", "bits": 8}, {"name": "j", "bits": 4}]}"#
                ), "second index"
            ),
            (schema(id, table: "drop table"), "plain identifier"),
            (schema(id, table: "coffer_meta"), "plain identifier"),
            (schema(id + ", {\"name\": \"a\", \"type\": \"float\"}"), "documented JSON shape"),
            (Data("[]".utf8), "documented JSON shape"),
            (Data("{\"tables\": []}".utf8), "no tables"),
        ]
        for (data, words) in cases {
            do {
                _ = try StoreSchema(json: data)
                Issue.record("accepted: \(String(decoding: data, as: UTF8.self))")
            } catch let error as CofferError {
                #expect(error.description.contains(words), "\(error.description)")
            }
        }
    }

    /// A schema that does not decode says where and what that place takes,
    /// never Swift's own `DecodingError` text.
    @Test func shapeMistakesNameTheirPlace() throws {
        let cases: [(String, String)] = [
            (
                #"{"tables": [{"name": "t", "primaryKey": "id", "fields": [{"name": "id", "type": "float"}]}]}"#,
                #"tables[0].fields[0].type must be "integer", "double", "date", "text" or "bytes""#
            ),
            (
                #"{"tables": [{"name": "t", "primaryKey": "id", "fields": [{"name": "id", "type": "text", "sealed": "yes"}]}]}"#,
                "tables[0].fields[0].sealed must be true or false"
            ),
            (#"{"tables": [{"name": "t", "fields": []}]}"#, "tables[0].primaryKey is missing"),
            (#"{"tables": [{"name": 7, "primaryKey": "id", "fields": []}]}"#, "tables[0].name must be a string"),
            (#"{"tables": {}}"#, "tables must be a list"),
            ("[]", "the file's top level must be an object"),
            ("{", "it is not JSON"),
            // A misspelt member is an error, never a weaker default (a clear field).
            (
                #"{"tables": [{"name": "t", "primaryKey": "id", "fields": [{"name": "id", "type": "integer"}, {"name": "s", "type": "text", "seald": true}]}]}"#,
                #"tables[0].fields[1] has "seald", which is not one of its members"#
            ),
            (#"{"tables": [], "version": 2}"#, #"the file's top level has "version""#),
        ]
        for (json, words) in cases {
            let error = #expect(throws: CofferError.self) { try StoreSchema(json: Data(json.utf8)) }
            let message = error.map { "\($0)" } ?? ""
            #expect(message.contains(words), "\(json): \(message)")
            #expect(!message.contains("DecodingError") && !message.contains("Debug description"))
        }
    }

    @Test func transformsDoWhatTheySay() throws {
        func run(_ names: [String], _ text: String) throws -> String? {
            StoreKeys.indexInput([.text(text)], transforms: try names.map(IndexTransform.init(parsing:)))?.first
        }
        #expect(try run(["trim", "lowercase"], "\t Alice@Example.COM \n") == "alice@example.com")
        #expect(try run(["email-domain"], "a@b@Example.org") == "Example.org")
        #expect(try run(["digits"], "+1 (555) 010-9999") == "15550109999")
        #expect(try run(["digits"], "none") == nil)
        #expect(try run(["first:2"], "Zoë") == "Zo" && run(["last:2"], "Zoë") == "oë")
        #expect(try run(["nfc"], "e\u{301}") == "\u{E9}")
        #expect(try run(["nfkc"], "ﬁ") == "fi")
        let custom = IndexTransform.custom("initials") { String($0.split(separator: " ").compactMap(\.first)) }
        #expect(StoreKeys.indexInput([.text("Ada King Lovelace")], transforms: [custom]) == ["AKL"])
        #expect(StoreKeys.indexInput([.bytes([1])], transforms: []) == nil)
        for bad in ["first:0", "last:x", "first:2000", "middle:3", ""] {
            #expect(throws: CofferError.self) { try IndexTransform(parsing: bad) }
        }
    }
}

/// The landing page's example (CofferStore.docc), as written there.
@Suite struct StoreDocumentationExampleTests {
    @Test func landingExampleRuns() throws {
        let schemaFileBytes = Data(
            #"{"tables": [{"name": "presents", "primaryKey": "id", "fields": [{"name": "id", "type": "integer"}]}]}"#
                .utf8)
        let storeID = [UInt8](repeating: 1, count: 16)
        let ring = KeyRing()
        let root = SymmetricKey(size: .bits256)

        let schema = try StoreSchema(json: schemaFileBytes)
        let keys = try StoreKeys(storeID: storeID, keyRing: ring, indexRoots: [1: root], current: 1)
        let life = [UInt8](repeating: 7, count: StoreKeys.lifeSize)  // the row's, from its coffer_life column
        let context = try keys.context(
            table: "presents", column: "description", primaryKey: .integer(42), life: life,
            bound: [("to", .text("Grandma"))])
        let sealed = try keys.sealCell(.text("a knitted scarf"), context: context)
        let opened = try keys.openCell(sealed, context: context, table: "presents", column: "description")
        let entry = try keys.indexValue(
            ["alice@example.com"], table: "users", index: "email_exact", bits: 16, version: 1)

        #expect(schema.tables.count == 1 && opened == .text("a knitted scarf") && entry.count == 4)
        #expect(!sealed.contains(Array("scarf".utf8)))
    }
}
