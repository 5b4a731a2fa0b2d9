#if Server
import Foundation
import Testing

@testable import CofferKeyClient

/// Every body the client sends or reads is its `Codable` type, and each
/// type is the schema docs/openapi.yaml gives it: the same properties, the
/// same required ones (the non-optionals), the same JSON types. The
/// document is read by PyYAML, not by Coffer.
@Suite struct KeyServerBodyTests {
    static func document() throws -> [String: Any] {
        let run = try Spawned.run(
            Issuer.root + "/.venv/bin/python",
            [
                "-c", "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)",
                Issuer.root + "/docs/openapi.yaml",
            ])
        #expect(run.status == 0, "PyYAML (in .venv, with schemathesis) reads docs/openapi.yaml")
        return try #require(try JSONSerialization.jsonObject(with: run.output) as? [String: Any])
    }

    /// The object at `path` (keys from the document's root), `$ref`s followed.
    static func schema(_ document: [String: Any], _ path: [String]) throws -> [String: Any] {
        var node: Any = document
        for key in path {
            node = try #require((node as? [String: Any])?[key], "no \(key) in \(path)")
            node = try resolved(document, node)
        }
        return try #require(node as? [String: Any])
    }

    static func resolved(_ document: [String: Any], _ node: Any) throws -> Any {
        guard let reference = (node as? [String: Any])?["$ref"] as? String else { return node }
        let parts = reference.dropFirst(2).split(separator: "/").map(String.init)
        return try schema(document, parts)
    }

    /// A type's full sample (every optional set) and its least (every optional nil).
    struct Case: Sendable {
        let name: String
        let path: [String]
        let full: any Encodable & Sendable
        let least: any Encodable & Sendable
    }

    static let json = ["application/json", "schema"]
    static let cases: [Case] = [
        Case(
            name: "Key", path: ["components", "schemas", "Key"],
            full: KeyServerBody.Key(
                purpose: "notes", version: 3, keyId: "0011223344556677", key: "k", device: "d", cacheSeconds: 600),
            least: KeyServerBody.Key(purpose: "notes", version: 3, keyId: "0011223344556677", key: "k")),
        Case(
            name: "KeyInfo", path: ["components", "schemas", "KeyInfo"],
            full: KeyServerBody.KeyInfo(purpose: "notes", version: 2, keyId: "0011223344556677"),
            least: KeyServerBody.KeyInfo(purpose: "notes", version: 2, keyId: "0011223344556677")),
        Case(
            name: "Problem", path: ["components", "schemas", "Problem"],
            full: KeyServerBody.Problem(
                type: "t", title: "t", status: 410, detail: "d", code: "key-shredded", requestId: "r"),
            least: KeyServerBody.Problem(type: "t", title: "t", status: 410, detail: "d", code: "key-shredded")),
        Case(
            name: "KeyRequest", path: ["paths", "/v1/keys/{purpose}", "post", "requestBody", "content"] + json,
            full: KeyServerBody.KeyRequest(device: "phone"), least: KeyServerBody.KeyRequest()),
        Case(
            name: "Rotate", path: ["components", "requestBodies", "Rotate", "content"] + json,
            full: KeyServerBody.Rotate(subject: "s", purpose: "p", device: "d", create: true),
            least: KeyServerBody.Rotate(subject: "s", purpose: "p")),
        Case(
            name: "Retire", path: ["components", "requestBodies", "Retire", "content"] + json,
            full: KeyServerBody.Retire(subject: "s", purpose: "p", device: "d", minimumVersion: 2),
            least: KeyServerBody.Retire(subject: "s", purpose: "p", minimumVersion: 2)),
        Case(
            name: "Shred", path: ["components", "requestBodies", "Shred", "content"] + json,
            full: KeyServerBody.Shred(subject: "s", undoWindowSeconds: 60, create: true, dryRun: true),
            least: KeyServerBody.Shred(subject: "s")),
        Case(
            name: "Shredding",
            path: ["paths", "/v1/admin/subjects/shred", "post", "responses", "200", "content"] + json,
            full: KeyServerBody.Shredding(
                subject: "s", shredAt: "2026-11-26T00:00:00Z", dryRun: true, storedVersions: 3),
            least: KeyServerBody.Shredding(subject: "s", shredAt: "2026-11-26T00:00:00Z")),
        Case(
            name: "Subjects", path: ["paths", "/v1/admin/subjects", "get", "responses", "200", "content"] + json,
            full: KeyServerBody.Subjects(subjects: ["a"], next: "a"), least: KeyServerBody.Subjects(subjects: ["a"])),
        Case(
            name: "UndoShred", path: ["components", "requestBodies", "UndoShred", "content"] + json,
            full: KeyServerBody.UndoShred(subject: "s"), least: KeyServerBody.UndoShred(subject: "s")),
    ]

    static func object(_ value: any Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(value)) as? [String: Any])
    }

    @Test func eachBodyIsItsSchema() throws {
        let document = try Self.document()
        for body in Self.cases {
            let schema = try Self.schema(document, body.path)
            let properties = try #require(schema["properties"] as? [String: Any], "\(body.name)")
            let required = Set(schema["required"] as? [String] ?? [])
            let full = try Self.object(body.full)
            #expect(Set(full.keys) == Set(properties.keys), "\(body.name): properties")
            #expect(Set(try Self.object(body.least).keys) == required, "\(body.name): required")
            #expect(schema["additionalProperties"] as? Bool == false, "\(body.name) admits no other property")
            for (name, value) in full {
                let property = try #require(try Self.resolved(document, properties[name] as Any) as? [String: Any])
                switch property["type"] as? String {
                case "integer": #expect(value is Int && !(value is Bool), "\(body.name).\(name) is an integer")
                case "string": #expect(value is String, "\(body.name).\(name) is a string")
                case "boolean":
                    #expect(value is Bool, "\(body.name).\(name) is a boolean")
                case "array": #expect(value is [Any], "\(body.name).\(name) is an array")
                default: Issue.record("\(body.name).\(name) has a type the test does not know")
                }
            }
        }
    }
}
#endif
