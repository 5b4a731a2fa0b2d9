import Foundation
import Testing

/// `coffer store put`'s own JSON reader against Python's json module, both
/// ways, and against malformed, truncated, oversized and hostile lines;
/// `coffer store find` listing, ordering, paging and counting.
@Suite struct StoreImportCLITests {
    static let schema = """
        {"tables": [{"name": "things", "primaryKey": "id",
          "fields": [{"name": "id", "type": "integer"},
                     {"name": "label", "type": "text", "sealed": true},
                     {"name": "secret", "type": "text", "sealed": true},
                     {"name": "number", "type": "integer"}]}]}
        """

    static var python: String? { Peers.which("python3") }
    static let peer = CLI.packageRoot.appendingPathComponent("Tests/CofferCLITests/Peers/json_peer.py").path

    /// 3,000 records written by Python's json (escapes, surrogate pairs,
    /// control characters, extreme integers, nulls, odd spacing) go in, and
    /// come out of `find` as JSON that Python reads back the same.
    @Test func pythonsJSONGoesInAndComesOutTheSame() throws {
        guard Peers.available([("python3", Self.python)]) else { return }
        let directory = try StoreCLITests.setUp(schema: Self.schema)
        for seed in [1, 2] {
            let given = directory.path("given\(seed).jsonl")
            let made = try CLI.run(Self.python!, [Self.peer, "make", "1500", "\(seed)", given])
            #expect(made.status == 0, "\(made.stderr)")
            StoreCLITests.ok(try StoreCLITests.store(["put", "--table", "things", given], directory), "put")
        }
        let listed = try StoreCLITests.store(["find", "--table", "things"], directory)
        StoreCLITests.ok(listed, "find")
        let both =
            try String(contentsOfFile: directory.path("given1.jsonl"), encoding: .utf8)
            + String(contentsOfFile: directory.path("given2.jsonl"), encoding: .utf8)
        try directory.write("given.jsonl", Array(both.utf8))
        try directory.write("printed.jsonl", listed.stdout)
        let compared = try CLI.run(
            Self.python!, [Self.peer, "same", directory.path("given.jsonl"), directory.path("printed.jsonl")])
        #expect(compared.status == 0, "\(compared.stdoutText)")
    }

    @Test func hostileLinesAreRefusedAndNameTheLine() throws {
        let directory = try StoreCLITests.setUp(schema: Self.schema)
        let good = #"{"label": "fine"}"#
        let bad: [(String, String)] = [
            (#"{"label": "cut"#, "not closed"), (#"{"label": "\ud800"}"#, "surrogate"),
            (#"{"label": "\udc00x"}"#, "surrogate"), (#"{"label": "\u00"}"#, "\\u"),
            (#"{"label": "x",}"#, "field name"), (#"{"label" "x"}"#, "no :"), (#"{"number": 01}"#, "leading zero"),
            (#"{"number": -}"#, "digits"), ("{\"label\": \"a\u{1}b\"}", "control character"),
            (#"{"label": "a", "label": "b"}"#, "twice"), (#"{"number": 9223372036854775808}"#, "JSON integer"),
            (#"{"number": 1.5}"#, "JSON integer"), (#"{"number": 1e3}"#, "JSON integer"),
            (#"{"label": {"a": 1}}"#, "JSON string"), (#"{"label": [1]}"#, "JSON string"),
            (#"{"label": true}"#, "JSON string"), (#"{"label": nul}"#, "not JSON"), (#"{"colour": "red"}"#, "no field"),
            (#"{"label": "x"} {"#, "follows"), (#"{"label": "\q"}"#, "unknown escape"),
            ("{" + String(repeating: "[", count: 100_000) + "}", "field name"),
        ]
        for (line, words) in bad {
            let input = Array((good + "\n" + good + "\n" + line + "\n" + good + "\n").utf8)
            let result = try StoreCLITests.store(["put", "--table", "things"], directory, stdin: input)
            #expect(
                result.status != 0 && result.stderr.contains("line 3") && result.stderr.contains(words),
                "\(line.prefix(60)): \(result.stderr)")
        }
        let notUTF8 = Array((good + "\n").utf8) + [0x7B, 0x22, 0xFF, 0x22, 0x7D, 0x0A]
        let result = try StoreCLITests.store(["put", "--table", "things"], directory, stdin: notUTF8)
        #expect(result.status != 0 && result.stderr.contains("UTF-8"), "\(result.stderr)")
        #expect(try StoreCLITests.store(["find", "--table", "things", "--count"], directory).stdoutText == "0\n")
        // A long value and every escape are read exactly.
        let long = String(repeating: "ü", count: 1 << 19)
        let escaped =
            #"{"label": "\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00", "secret": "\#(long)", "number": -9223372036854775808}"#
        StoreCLITests.ok(
            try StoreCLITests.store(["put", "--table", "things"], directory, stdin: Array(escaped.utf8)), "put")
        let got = try StoreCLITests.store(["get", "--table", "things", "--id", "1"], directory)
        let record = try JSONSerialization.jsonObject(with: Data(got.stdout)) as? [String: Any]
        #expect(record?["label"] as? String == "\"\\/\u{8}\u{c}\n\r\té😀")
        #expect(record?["secret"] as? String == long && record?["number"] as? Int64 == Int64.min)
    }

    /// A bad line stops the import before its batch: the batches before it
    /// are stored and their keys printed, and the error names the line
    /// (blank lines counted, as an editor counts them).
    @Test func aBadLineStopsBeforeItsBatch() throws {
        let directory = try StoreCLITests.setUp(schema: Self.schema)
        var lines = (1...25_000).map { #"{"label": "l\#($0)", "number": \#($0)}"# }
        lines[9] = "   "
        lines[23_456] = #"{"label": 5}"#
        let input = Array((lines.joined(separator: "\r\n") + "\n").utf8)
        let result = try StoreCLITests.store(["put", "--table", "things", "--batch", "10000"], directory, stdin: input)
        #expect(result.status != 0 && result.stderr.contains("line 23457:"), "\(result.stderr)")
        let keys = result.stdoutText.split(separator: "\n")
        #expect(keys.count == 20_000 && keys.last == #"{"id":20000}"#)
        #expect(try StoreCLITests.store(["find", "--table", "things", "--count"], directory).stdoutText == "20000\n")
    }

    @Test func findListsOrdersPagesAndCounts() throws {
        let directory = try StoreCLITests.setUp(schema: Self.schema)
        let lines = [5, 3, 9, 3, 1].map { #"{"label": "n\#($0)", "number": \#($0)}"# }.joined(separator: "\n")
        StoreCLITests.ok(
            try StoreCLITests.store(["put", "--table", "things"], directory, stdin: Array(lines.utf8)), "put")
        func find(_ options: [String]) throws -> [String] {
            let result = try StoreCLITests.store(["find", "--table", "things"] + options, directory)
            StoreCLITests.ok(result, "find \(options)")
            return result.stdoutText.split(separator: "\n").map(String.init)
        }
        #expect(try find([]).count == 5)
        #expect(try find(["--count"]) == ["5"])
        #expect(try find(["--where", "number=3", "--count"]) == ["2"])
        let ordered = try find(["--order-by", "number:desc", "--limit", "3", "--offset", "1"])
        #expect(ordered.map { $0.contains("\"number\":5") || $0.contains("\"number\":3") } == [true, true, true])
        #expect(ordered[0].contains("\"id\":1") && ordered[1].contains("\"id\":2") && ordered[2].contains("\"id\":4"))
        let refused = try StoreCLITests.store(["find", "--table", "things", "--order-by", "label"], directory)
        #expect(refused.status != 0 && refused.stderr.contains("sealed"), "\(refused.stderr)")
        #expect(try StoreCLITests.store(["find", "--table", "things", "--limit", "-1"], directory).status == 64)
    }

    /// The whole-store jobs refuse a batch below one row as a usage
    /// error, before they open the store (no store here to open).
    @Test func jobsRefuseAnEmptyBatch() throws {
        let directory = try TemporaryDirectory()
        for job in [["rotate"], ["reindex"], ["migrate", "--table", "t", "--field", "f"]] {
            let refused = try CLI.coffer(
                ["store"] + job + ["--db", "missing.sqlite", "--kek-file", "kek", "--batch", "0"], in: directory.url)
            #expect(refused.status == 64, "\(job): \(refused.status)")
            #expect(refused.stderr.contains("--batch is at least 1"), "\(job): \(refused.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.url.appendingPathComponent("missing.sqlite").path))
    }
}
