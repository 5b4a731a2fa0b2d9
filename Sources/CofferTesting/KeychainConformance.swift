import Coffer
import CofferKeychain
import Foundation
import Synchronization

/// One suite every `Keychain` backend must pass: duplicates, not found,
/// update collisions, delete-all-matching, key generation, redacted
/// descriptions, concurrent use. Framework-free, so it runs under any test
/// runner (Swift Testing here, XCTest on a Mac): each check throws a
/// `Failure` naming the rule that broke.
public enum KeychainConformance {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    static func check(_ condition: Bool, _ rule: String) throws {
        guard condition else { throw Failure(description: "keychain conformance: \(rule)") }
    }

    static func expectError(_ code: KeychainError.Code, _ rule: String, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as KeychainError {
            try check(error.code == code, "\(rule): expected \(code), got \(error.code)")
            return
        }
        throw Failure(description: "keychain conformance: \(rule): expected \(code), nothing was thrown")
    }

    /// Runs every check against a fresh, empty keychain from `make`.
    public static func run(_ make: () throws -> any Keychain) throws {
        try passwords(try make())
        try updatesAndDeletes(try make())
        try keys(try make())
        try concurrency(try make())
    }

    static func passwords(_ keychain: any Keychain) throws {
        try expectError(.itemNotFound, "an empty keychain finds nothing") { _ = try keychain.copyMatching(.password()) }
        let secret = SecretBytes(Array("hunter2".utf8))
        try keychain.add(
            .password(service: "api", account: "alice", label: "Alice's token", accessGroup: "group.main"), data: secret
        )
        try expectError(.duplicateItem, "adding the same service and account twice") {
            try keychain.add(
                .password(service: "api", account: "alice", accessGroup: "group.main"), data: SecretBytes([1]))
        }
        try keychain.add(.password(service: "api", account: "bob"), data: SecretBytes(Array("b".utf8)))
        // Another access group is another namespace.
        try keychain.add(
            .password(service: "api", account: "alice", accessGroup: "group.other"), data: SecretBytes([2]))
        try check(
            try keychain.copyData(.password(service: "api", account: "alice").inGroup("group.main")) == secret,
            "copyData returns what add stored")
        try check(try keychain.copyMatching(.password(service: "api")).count == 3, "copyMatching returns every match")
        try check(
            try keychain.copyMatching(.password(service: "api", account: "alice")).count == 2,
            "a query without a group matches every group")
        let item = try keychain.copyMatching(.password(service: "api", account: "alice").inGroup("group.main")).first!
        try check(item.label == "Alice's token" && item.accessGroup == "group.main", "attributes come back")
        try check(
            !String(describing: secret).contains("hunter2") && !String(reflecting: secret).contains("hunter2"),
            "secrets print redacted")
        var dump = ""
        Swift.dump(secret, to: &dump)
        try check(!dump.contains("104"), "dump shows no secret bytes")  // 'h' = 104
        try expectError(.itemNotFound, "a missing account is not found") {
            _ = try keychain.copyData(.password(service: "api", account: "carol"))
        }
    }

    static func updatesAndDeletes(_ keychain: any Keychain) throws {
        try keychain.add(.password(service: "s", account: "a"), data: SecretBytes([1]))
        try keychain.add(.password(service: "s", account: "b"), data: SecretBytes([2]))
        try keychain.add(.password(service: "t", account: "a"), data: SecretBytes([3]))
        try keychain.update(.password(service: "s"), label: .some("relabelled"), comment: nil, data: nil)
        try check(
            try keychain.copyMatching(.password(service: "s")).allSatisfy { $0.label == "relabelled" },
            "update changes every match")
        try check(
            try keychain.copyMatching(.password(service: "t")).first?.label == nil, "update leaves non-matches alone")
        try keychain.update(.password(service: "s", account: "a"), label: nil, comment: nil, data: SecretBytes([9]))
        try check(
            try keychain.copyData(.password(service: "s", account: "a")) == SecretBytes([9]), "update replaces data")
        // Renaming b's account to a's collides: refused, and nothing changes.
        try expectError(.duplicateItem, "an update that makes two items collide") {
            try keychain.update(
                .password(service: "s", account: "b"), with: KeychainChanges(account: "a", data: SecretBytes([7])))
        }
        try check(
            try keychain.copyData(.password(service: "s", account: "b")) == SecretBytes([2]),
            "a refused update changes nothing")
        try expectError(.duplicateItem, "an update matching several items that gives them one primary key") {
            try keychain.update(.password(service: "s"), with: KeychainChanges(account: "same"))
        }
        try keychain.update(
            .password(service: "t", account: "a"), with: KeychainChanges(account: "renamed", comment: .some("moved")))
        let renamed = try keychain.copyMatching(.password(service: "t"))
        try check(
            renamed.count == 1 && renamed[0].account == "renamed" && renamed[0].comment == "moved",
            "an update can change the primary key")
        try check(renamed[0].modified >= renamed[0].created, "an update stamps the modification date")
        try keychain.update(.password(service: "t", account: "renamed"), with: KeychainChanges(account: "a"))
        try expectError(.invalidArgument, "a password item has no application tag") {
            try keychain.update(.password(service: "t"), with: KeychainChanges(applicationTag: "x"))
        }
        try expectError(.itemNotFound, "updating nothing") {
            try keychain.update(.password(service: "none"), label: .some("x"), comment: nil, data: nil)
        }
        try keychain.delete(.password(service: "s"))
        try expectError(.itemNotFound, "delete removes every match") {
            _ = try keychain.copyMatching(.password(service: "s"))
        }
        try check(try keychain.copyMatching(.password(service: "t")).count == 1, "delete leaves non-matches")
        try expectError(.itemNotFound, "deleting nothing") { try keychain.delete(.password(service: "s")) }
    }

    static func keys(_ keychain: any Keychain) throws {
        for type in [KeychainKeyType.p256, .x25519, .symmetric256] {
            let publicKey = try keychain.generateKey(type, tag: "com.example.\(type.rawValue)", label: "test key")
            try check((publicKey == nil) == (type == .symmetric256), "generateKey returns a public key for \(type)")
            try expectError(.duplicateItem, "generating the same tag and type twice") {
                try keychain.generateKey(type, tag: "com.example.\(type.rawValue)")
            }
        }
        let generated = try keychain.getOrCreateKey(.p256, tag: "com.example.p256")
        let again = try keychain.publicKey(tag: "com.example.p256", type: .p256)
        try check(generated.map(spki) == spki(again), "getOrCreateKey returns the existing key")
        let items = try keychain.copyMatching(.key())
        try check(
            items.count == 3 && items.allSatisfy { $0.label == "test key" },
            "key items are listed with their attributes")
        try check(
            try keychain.exportPrivateKey(tag: "com.example.p256", type: .p256).algorithm == "P-256",
            "the named export returns the private key")
        // Called through `any Keychain`, these reach the backend's own
        // implementations (they are requirements), and they must agree.
        try check(
            spki(try keychain.exportPrivateKey(tag: "com.example.p256", type: .p256).publicKey) == spki(again),
            "publicKey agrees with the exported private key's public half")
        try check(
            try keychain.getOrCreateKey(.p256, tag: "com.example.p256", label: "ignored").map(spki) == spki(again),
            "getOrCreateKey(_:tag:label:) returns the existing key")
        try keychain.delete(.key(tag: "com.example.x25519"))
        try expectError(.itemNotFound, "a deleted key is gone") {
            _ = try keychain.publicKey(tag: "com.example.x25519", type: .x25519)
        }
    }

    static func spki(_ key: AsymmetricPublicKey) -> [UInt8] { (try? KeyFiles.encode(key, as: .spki, der: true)) ?? [] }

    /// Four threads add 50 items each at once: all 200 are there.
    static func concurrency(_ keychain: any Keychain) throws {
        let failures = LockedCounter()
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for index in 0..<50 {
                do {
                    try keychain.add(
                        .password(service: "concurrent", account: "\(worker)-\(index)"),
                        data: SecretBytes([UInt8(index)]))
                } catch {
                    failures.increment()
                }
            }
        }
        try check(failures.value == 0, "concurrent adds do not fail")
        try check(try keychain.copyMatching(.password(service: "concurrent")).count == 200, "no concurrent add is lost")
    }
}

final class LockedCounter: Sendable {
    private let count = Locked(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

extension KeychainQuery {
    func inGroup(_ group: String?) -> KeychainQuery {
        var query = self
        query.accessGroup = group
        return query
    }
}
