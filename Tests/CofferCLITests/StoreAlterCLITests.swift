import Foundation
import Testing

/// `coffer store alter`: a new schema file's additions made to a store
/// with records in it, once; anything but additions refused.
@Suite struct StoreAlterCLITests {
    static let grown = """
        {"tables": [{"name": "presents", "primaryKey": "id",
          "fields": [{"name": "id", "type": "integer"},
                     {"name": "to", "type": "text"},
                     {"name": "description", "type": "text", "sealed": true, "bind": ["to"],
                      "indexes": [{"name": "description_exact", "bits": 10}]},
                     {"name": "email", "type": "text", "sealed": true,
                      "indexes": [{"name": "email_exact", "transforms": ["trim", "lowercase"], "bits": 16}]},
                     {"name": "shop", "type": "text"},
                     {"name": "note", "type": "text", "sealed": true, "bind": ["to"],
                      "indexes": [{"name": "note_exact", "transforms": ["lowercase"], "bits": 12}]}]},
         {"name": "shops", "primaryKey": "name", "fields": [{"name": "name", "type": "text"}]}]}
        """

    @Test func alterAddsOnceAndOnlyAdds() throws {
        let directory = try StoreCLITests.setUp()
        let lines = (0..<30).map { #"{"to": "t\#($0 % 3)", "description": "gift \#($0 % 5)"}"# }.joined(separator: "\n")
        StoreCLITests.ok(
            try StoreCLITests.store(["put", "--table", "presents"], directory, stdin: Array(lines.utf8)), "put")
        try directory.write("grown.json", Array(Self.grown.utf8))
        let altered = try StoreCLITests.store(["alter", "--schema", "grown.json", "--name", "v2"], directory)
        StoreCLITests.ok(altered, "alter")
        #expect(
            altered.stdoutText.split(separator: "\n") == [
                "added index description_exact on presents.description", "added field presents.shop",
                "added field presents.note", "added table shops",
            ], "\(altered.stdoutText)")
        let again = try StoreCLITests.store(["alter", "--schema", "grown.json", "--name", "v2"], directory)
        #expect(again.status == 0 && again.stdoutText.contains("applied before"), "\(again.stdoutText)")
        try directory.write("gift", Array("gift 2".utf8))
        let found = try StoreCLITests.store(
            ["find", "--table", "presents", "--where-file", "description=gift", "--count"], directory)
        #expect(found.stdoutText == "6\n", "\(found.stderr)")
        let put = try StoreCLITests.store(
            ["put", "--table", "presents"], directory,
            stdin: Array(#"{"to": "Sam", "description": "kite", "note": "Blue", "shop": "Toys"}"#.utf8))
        StoreCLITests.ok(put, "put with the new fields")
        try directory.write("note", Array("blue".utf8))
        let byNote = try StoreCLITests.store(["find", "--table", "presents", "--where-file", "note=note"], directory)
        #expect(byNote.stdoutText.contains("\"shop\":\"Toys\""), "\(byNote.stdoutText)")
        StoreCLITests.ok(try StoreCLITests.store(["verify"], directory), "verify")

        let dropped = Self.grown.replacingOccurrences(of: #""name": "email""#, with: #""name": "mail""#)
        try directory.write("dropped.json", Array(dropped.utf8))
        let refused = try StoreCLITests.store(["alter", "--schema", "dropped.json"], directory)
        #expect(refused.status != 0 && refused.stderr.contains("has no field presents.email"), "\(refused.stderr)")
    }
}
