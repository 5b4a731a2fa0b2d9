import Foundation
import Testing

/// `coffer store import --from aerogear-plist` and `coffer convert --from
/// aerogear-…` against Xmas data made by an independent implementation
/// (Tests/CofferCLITests/Peers/aerogear_peer.py: plistlib, hashlib,
/// pyca/cryptography, PyNaCl), both generations, XML and binary, passwords
/// outside ASCII; damaged and hostile data import nothing.
@Suite struct AeroGearCLITests {
    static let schema = """
        {"tables": [{"name": "presents", "primaryKey": "id",
          "fields": [{"name": "id", "type": "text"},
                     {"name": "toWhom", "type": "text"},
                     {"name": "description", "type": "text", "sealed": true, "bind": ["toWhom"]}]}]}
        """
    static let peer = CLI.packageRoot.appendingPathComponent("Tests/CofferCLITests/Peers/aerogear_peer.py").path

    struct Gift: Decodable, Hashable {
        var id: String
        var toWhom: String
        var description: String
    }

    /// A store, and an Xmas app's files made by the peer.
    static func setUp(_ generation: String, _ format: String, _ ivKey: String, count: Int) throws -> TemporaryDirectory?
    {
        guard Peers.available([("python3 with cryptography and PyNaCl", Peers.python)]) else { return nil }
        let directory = try StoreCLITests.setUp(schema: schema)
        try peer(["make", generation, format, ivKey, String(count), directory.url.path])
        chmod(directory.path("password"), 0o600)
        return directory
    }

    static func peer(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try CLI.run(Peers.python!, [peer] + arguments)
        #expect(
            result.status == 0, "aerogear_peer.py \(arguments.first!): \(result.stderr)", sourceLocation: sourceLocation
        )
    }

    static func importing(_ directory: TemporaryDirectory, extra: [String] = []) throws -> CLI.Result {
        try StoreCLITests.store(
            [
                "import", "--table", "presents", "--from", "aerogear-plist", "xmas", "--aerogear-defaults",
                "defaults.plist", "--aerogear-prefix", "xmas", "--aerogear-password-file", "password",
            ] + extra, directory)
    }

    static func stored(_ directory: TemporaryDirectory) throws -> Set<Gift> {
        let found = try StoreCLITests.store(["find", "--table", "presents"], directory)
        StoreCLITests.ok(found, "find")
        return Set(
            try found.stdoutText.split(separator: "\n").map {
                try JSONDecoder().decode(Gift.self, from: Data($0.utf8))
            })
    }

    static func count(_ directory: TemporaryDirectory) throws -> String {
        try StoreCLITests.store(["find", "--table", "presents", "--count"], directory).stdoutText
    }

    @Test(arguments: [
        ("cbc", "xml", "IV"), ("cbc", "binary", "iv"), ("secretbox", "xml", "nonce"), ("secretbox", "binary", "nonce"),
    ])
    func everyRecordArrivesAsTheAppsUserTypedIt(generation: String, format: String, ivKey: String) throws {
        guard let directory = try Self.setUp(generation, format, ivKey, count: 40) else { return }
        let result = try Self.importing(directory)
        StoreCLITests.ok(result, "import")
        #expect(result.stdoutText.split(separator: "\n").count == 40)
        let expected = try JSONDecoder().decode([Gift].self, from: Data(try directory.read("expected.json")))
        #expect(try Self.stored(directory) == Set(expected))
        // "toWhom" stays searchable; the descriptions are sealed in the file.
        let toSam = try StoreCLITests.store(
            ["find", "--table", "presents", "--where", "toWhom=Sam", "--count"], directory)
        #expect(toSam.stdoutText == "\(expected.filter { $0.toWhom == "Sam" }.count)\n")
        let file = Data(try directory.read("s.sqlite"))
        for gift in expected where gift.description.utf8.count > 8 {
            #expect(file.range(of: Data(gift.description.utf8)) == nil, "\(gift.description) is in the store file")
        }
        // Importing again adds nothing: the ids are taken.
        let again = try Self.importing(directory)
        #expect(again.status != 0)
        #expect(try Self.count(directory) == "40\n")
    }

    @Test func aWrongPasswordOrOneDamagedValueImportsNothingAndNamesTheRecord() throws {
        for generation in ["cbc", "secretbox"] {
            guard let directory = try Self.setUp(generation, "binary", generation == "cbc" ? "IV" : "nonce", count: 12)
            else { return }
            let right = try directory.read("password")
            try directory.write("password", Array("a guess\n".utf8))
            let wrong = try Self.importing(directory)
            #expect(wrong.status == 2, "\(wrong.stderr)")
            #expect(wrong.stderr.contains("record 1 (id") && wrong.stderr.contains("--aerogear-password-file"))
            #expect(try Self.count(directory) == "0\n")
            try directory.write("password", right)
            if generation == "secretbox" {
                try Self.peer(["damage", directory.url.path, "7"])
                let damaged = try Self.importing(directory)
                #expect(damaged.status == 2 && damaged.stderr.contains("record 7 (id"), "\(damaged.stderr)")
                #expect(try Self.count(directory) == "0\n")
            }
        }
    }

    @Test func hostileStoresAndDefaultsAreRefusedClearly() throws {
        guard let directory = try Self.setUp("secretbox", "binary", "nonce", count: 3) else { return }
        let cases: [(String, String)] = [
            ("truncated", "not a well-formed property list"), ("truncated-xml", "not a well-formed property list"),
            ("deep-xml", "not a well-formed property list"), ("deep-binary", "not a well-formed property list"),
            ("huge-count", "not a well-formed property list"), ("many-references", "at most 1000000"),
            ("reference-bomb", "reference bomb"),
            ("not-a-plist", "not a property list"), ("dictionary", "not an array of records"),
            ("encrypted-store", "ENCRYPTED_PLIST"), ("not-a-record", "record 2 is text"),
            ("nested-value", "field \"toWhom\" of record 1 is a dictionary"), ("oversized", "larger than 16 MiB"),
        ]
        for (kind, words) in cases {
            try Self.peer(["hostile", directory.url.path, kind])
            let started = Date()
            let result = try Self.importing(directory)
            #expect(result.status > 0 && result.status < 64 + 64, "\(kind): \(result.status)")
            #expect(result.stderr.contains(words), "\(kind): \(result.stderr)")
            #expect(Date().timeIntervalSince(started) < 30, "\(kind) took too long")
        }
        #expect(try Self.count(directory) == "0\n")

        guard let fresh = try Self.setUp("secretbox", "xml", "nonce", count: 3) else { return }
        let defaults = try fresh.read("defaults.plist")
        for (kind, words) in [
            ("no-salt", "no xmas.salt"), ("both", "name the generation"),
            ("salt-text", "xmas.salt in the defaults is text"),
        ] {
            try fresh.write("defaults.plist", defaults)
            try Self.peer(["defaults", fresh.url.path, kind])
            let result = try Self.importing(fresh)
            #expect(result.status != 0 && result.stderr.contains(words), "\(kind): \(result.stderr)")
        }
        // A generation that does not match what the defaults hold.
        try fresh.write("defaults.plist", defaults)
        let mismatch = try Self.importing(fresh, extra: ["--aerogear-generation", "cbc"])
        #expect(mismatch.status != 0 && mismatch.stderr.contains("IV"), "\(mismatch.stderr)")
        // A field the table does not have.
        let narrow = try StoreCLITests.setUp(
            schema: """
                {"tables": [{"name": "presents", "primaryKey": "id",
                  "fields": [{"name": "id", "type": "text"}, {"name": "description", "type": "text", "sealed": true}]}]}
                """)
        for name in ["xmas", "defaults.plist", "password"] { try narrow.write(name, try fresh.read(name)) }
        chmod(narrow.path("password"), 0o600)
        let missing = try Self.importing(narrow)
        #expect(missing.status != 0 && missing.stderr.contains("has no field \"toWhom\""), "\(missing.stderr)")
        #expect(try Self.count(narrow) == "0\n")
        #expect(try Self.count(fresh) == "0\n")
        StoreCLITests.ok(try Self.importing(fresh), "the undamaged files")
        #expect(try Self.count(fresh) == "3\n")
    }

    /// One stored value to an age file, from the defaults or from hex.
    @Test func convertTurnsOneValueIntoAnAgeFile() throws {
        for (generation, ivKey) in [("cbc", "iv"), ("secretbox", "nonce")] {
            guard let directory = try Self.setUp(generation, "xml", ivKey, count: 3) else { return }
            StoreCLITests.ok(try CLI.coffer(["keygen", "-o", "id.txt"], in: directory.url), "keygen")
            let recipient = try CLI.coffer(["keygen", "-y", "id.txt"], in: directory.url).stdoutText
                .trimmingCharacters(in: .whitespacesAndNewlines)
            try Self.peer(["value", directory.url.path, "2", directory.path("value")])
            let expected = try JSONDecoder().decode([Gift].self, from: Data(try directory.read("expected.json")))[1]
            let from = "aerogear-\(generation)"
            let converted = try CLI.coffer(
                [
                    "convert", "--from", from, "--passphrase-file", "password", "--aerogear-defaults",
                    "defaults.plist", "--aerogear-prefix", "xmas", "-r", recipient, "-o", "value.age", "value",
                ], in: directory.url)
            StoreCLITests.ok(converted, "convert \(from)")
            #expect(converted.stderr.contains("unauthenticated") == (generation == "cbc"))
            let opened = try CLI.coffer(["decrypt", "-i", "id.txt", "value.age"], in: directory.url)
            #expect(opened.stdoutText == expected.description)
            // The other generation's name is refused before any password.
            let other = generation == "cbc" ? "aerogear-secretbox" : "aerogear-cbc"
            let wrongKind = try CLI.coffer(
                [
                    "convert", "--from", other, "--passphrase-file", "password", "--aerogear-defaults",
                    "defaults.plist", "--aerogear-prefix", "xmas", "-r", recipient, "-o", "never.age", "value",
                ], in: directory.url)
            #expect(wrongKind.status != 0 && !directory.exists("never.age"), "\(wrongKind.stderr)")
            // Neither the defaults nor hex: a usage error.
            let neither = try CLI.coffer(
                ["convert", "--from", from, "--passphrase-file", "password", "-r", recipient, "value"],
                in: directory.url)
            #expect(neither.status == 64 && neither.stderr.contains("--aerogear-salt"), "\(neither.stderr)")
            // The import's own password option works here too; two password options do not.
            let sameOption = try CLI.coffer(
                [
                    "convert", "--from", from, "--aerogear-password-file", "password", "--aerogear-defaults",
                    "defaults.plist", "--aerogear-prefix", "xmas", "-r", recipient, "-o", "same.age", "value",
                ], in: directory.url)
            StoreCLITests.ok(sameOption, "convert \(from) --aerogear-password-file")
            let reopened = try CLI.coffer(["decrypt", "-i", "id.txt", "same.age"], in: directory.url)
            #expect(reopened.stdoutText == expected.description)
            let twice = try CLI.coffer(
                [
                    "convert", "--from", from, "--aerogear-password-file", "password", "--passphrase-file", "password",
                    "--aerogear-defaults", "defaults.plist", "--aerogear-prefix", "xmas", "-r", recipient, "value",
                ], in: directory.url)
            #expect(twice.status == 64 && twice.stderr.contains("give the password once"), "\(twice.stderr)")
        }
    }

    /// `coffer tour presents` makes an Xmas app's files and migrates them.
    @Test func tourPresentsMigratesTheXmasData() throws {
        let tour = try CLI.coffer(["tour", "presents"])
        StoreCLITests.ok(tour, "tour presents")
        for line in [
            "Sam's and Zoë's kites are the same bytes", "a wrong password opened none", "4 records",
            "a knitted scarf, jasmine tea", "no description is readable",
        ] {
            #expect(tour.stdoutText.contains(line), "\(tour.stdoutText)")
        }
    }

    /// The same import into a PostgreSQL store (scripts/with-postgres): one
    /// transaction there too, and a wrong password leaves the table empty.
    #if Server
    @Test(.enabled(if: StorePostgresCLITests.available)) func importsIntoPostgreSQL() throws {
        guard Peers.available([("python3 with cryptography and PyNaCl", Peers.python)]) else { return }
        let (directory, options) = try StorePostgresCLITests.setUp(
            "aerogear_\(UInt32.random(in: 0...UInt32.max))", schema: Self.schema)
        try Self.peer(["make", "secretbox", "binary", "nonce", "25", directory.url.path])
        chmod(directory.path("password"), 0o600)
        let arguments = [
            "import", "--table", "presents", "--from", "aerogear-plist", "xmas", "--aerogear-defaults",
            "defaults.plist",
            "--aerogear-password-file", "password",
        ]
        let right = try directory.read("password")
        try directory.write("password", Array("a guess\n".utf8))
        let wrong = try StorePostgresCLITests.run(arguments, options, directory)
        #expect(wrong.status == 2 && wrong.stderr.contains("record 1 (id"), "\(wrong.stderr)")
        let none = try StorePostgresCLITests.run(["find", "--table", "presents", "--count"], options, directory)
        #expect(none.stdoutText == "0\n")
        try directory.write("password", right)
        StoreCLITests.ok(try StorePostgresCLITests.run(arguments, options, directory), "import on PostgreSQL")
        let found = try StorePostgresCLITests.run(["find", "--table", "presents"], options, directory)
        StoreCLITests.ok(found, "find")
        let stored = Set(
            try found.stdoutText.split(separator: "\n").map { try JSONDecoder().decode(Gift.self, from: Data($0.utf8)) }
        )
        let expected = try JSONDecoder().decode([Gift].self, from: Data(try directory.read("expected.json")))
        #expect(stored == Set(expected))
    }
    #endif
}
