import Foundation
import Testing

/// Doubles and dates through `coffer store`: JSON numbers and ISO 8601
/// strings in, the same forms out, ordered as numbers and moments, and a
/// value of another form refused naming the field.
@Suite struct StoreTypesCLITests {
    static let schema = """
        {"tables": [{"name": "readings", "primaryKey": "id", "fields": [
          {"name": "id", "type": "integer"},
          {"name": "score", "type": "double"},
          {"name": "taken", "type": "date"},
          {"name": "secret", "type": "double", "sealed": true}
        ]}]}
        """

    @Test func doublesAndDatesGoInAndComeOutInTheirJSONForms() throws {
        let directory = try StoreCLITests.setUp(schema: Self.schema)
        let lines = [
            #"{"score": 10.5, "taken": "2026-11-28T12:00:00.250Z", "secret": -1e-3}"#,
            #"{"score": 9.75, "taken": 1795867200000, "secret": 2}"#,
            #"{"score": -0.5, "taken": "2026-11-28T13:00:00+01:00", "secret": 1.5E2}"#,
            #"{"score": null, "taken": null}"#,
        ]
        let put = try StoreCLITests.store(
            ["put", "--table", "readings"], directory, stdin: Array((lines.joined(separator: "\n") + "\n").utf8))
        #expect(put.status == 0, "\(put.stderr)")
        let found = try StoreCLITests.store(
            ["find", "--table", "readings", "--order-by", "score", "--order-by", "id"], directory)
        #expect(found.status == 0, "\(found.stderr)")
        // Numbers ordered as numbers (text would put 10.5 before 9.75), dates
        // written back in ISO 8601 with milliseconds, UTC.
        #expect(
            found.stdoutText.split(separator: "\n") == [
                #"{"id":4,"score":null,"taken":null,"secret":null}"#,
                #"{"id":3,"score":-0.5,"taken":"2026-11-28T12:00:00.000Z","secret":150.0}"#,
                #"{"id":2,"score":9.75,"taken":"2026-11-28T12:00:00.000Z","secret":2.0}"#,
                #"{"id":1,"score":10.5,"taken":"2026-11-28T12:00:00.250Z","secret":-0.001}"#,
            ], "\(found.stdoutText)")
        let noon = try StoreCLITests.store(
            ["find", "--table", "readings", "--where", "taken=2026-11-28T12:00:00Z", "--order-by", "id"], directory)
        #expect(noon.stdoutText.split(separator: "\n").count == 2, "\(noon.stdoutText) \(noon.stderr)")

        for (line, says) in [
            (#"{"score": "1.5"}"#, "readings.score takes a JSON number or null"),
            (#"{"score": 1e400}"#, "readings.score takes a JSON number or null"),
            (#"{"taken": "yesterday"}"#, "readings.taken takes an ISO 8601 date string or milliseconds"),
            (#"{"taken": 1.5}"#, "readings.taken takes an ISO 8601 date string or milliseconds"),
            (#"{"score": 1.}"#, "a number is cut short"),
            (#"{"score": 1e}"#, "a number is cut short"),
        ] {
            let refused = try StoreCLITests.store(["put", "--table", "readings"], directory, stdin: Array(line.utf8))
            #expect(refused.status != 0 && refused.stderr.contains(says), "\(line): \(refused.stderr)")
        }
    }
}
