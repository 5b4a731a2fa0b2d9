import Coffer
import CofferKeychain
import CofferTesting
import Crypto
import Foundation
import Testing

/// AppleKeychain's logic (`SecItemKeychain` over a `SecItemBackend`), run on
/// every platform against `FakeSecItems`, which keeps Apple's documented
/// SecItem rules in memory. On a Mac the same logic runs on the Security
/// framework (`ConformanceTests.appleKeychain`).
@Suite struct SecItemKeychainTests {
    static func keychain(
        dataProtection: Bool, namespace: String?, backend: FakeSecItems = FakeSecItems()
    ) -> SecItemKeychain<FakeSecItems> {
        SecItemKeychain(
            layout: SecItemLayout(useDataProtectionKeychain: dataProtection, namespace: namespace), backend: backend)
    }

    @Test(arguments: [(true, nil), (true, "tests"), (false, nil), (false, "tests")] as [(Bool, String?)])
    func conformance(dataProtection: Bool, namespace: String?) throws {
        try KeychainConformance.run { Self.keychain(dataProtection: dataProtection, namespace: namespace) }
    }

    /// Two namespaces on one keychain never see each other's items; the
    /// file-based keychain's folded access groups keep groups apart too.
    @Test(arguments: [true, false])
    func namespacesAndGroupsStayApart(dataProtection: Bool) throws {
        let backend = FakeSecItems()
        let first = Self.keychain(dataProtection: dataProtection, namespace: "one", backend: backend)
        let second = Self.keychain(dataProtection: dataProtection, namespace: "two", backend: backend)
        try first.add(.password(service: "s", account: "a", accessGroup: "g1"), data: SecretBytes([1]))
        try second.add(.password(service: "s", account: "a", accessGroup: "g1"), data: SecretBytes([2]))
        try first.add(.password(service: "s", account: "a", accessGroup: "g2"), data: SecretBytes([3]))
        try first.generateKey(.symmetric256, tag: "k", label: nil)
        #expect(try first.copyMatching(.password()).count == 2)
        #expect(try second.copyMatching(.password()).count == 1)
        #expect(try second.copyData(.password(service: "s", account: "a")) == SecretBytes([2]))
        var inSecondGroup = KeychainQuery.password(service: "s", account: "a")
        inSecondGroup.accessGroup = "g2"
        #expect(try first.copyData(inSecondGroup) == SecretBytes([3]))
        #expect(throws: KeychainError(.itemNotFound, "")) { try second.copyMatching(.key(tag: "k")) }
        // The key kept as a generic password is not a password item.
        #expect(try first.copyMatching(.password()).allSatisfy { $0.service == "s" })
        // What is stored: the namespace (and, without data protection, the group) prefix the service.
        let stored = try backend.search([.itemClass: .genericPasswordClass, .synchronizable: .synchronizableAny])
        let services = Set(
            stored.compactMap { $0.attributes[.service].flatMap { if case .string(let s) = $0 { s } else { nil } } })
        let separator = "\u{1F}"
        if dataProtection {
            #expect(services == ["one\(separator)s", "two\(separator)s", "coffer.key.symmetric256"])
        } else {
            #expect(
                services == [
                    "one\(separator)g1\(separator)s", "two\(separator)g1\(separator)s",
                    "one\(separator)g2\(separator)s",
                    "coffer.key.symmetric256",
                ])
        }
    }

    /// SecKey items take PKCS#8 of their own type only, and their bytes are not updated in place.
    @Test func secKeysKeepTheirRules() throws {
        let keychain = Self.keychain(dataProtection: true, namespace: nil)
        let p256 = try KeyFiles.encode(AsymmetricPrivateKey.p256(P256.Signing.PrivateKey()), as: .pkcs8, der: true)
        #expect(throws: KeychainError(.invalidArgument, "")) {
            try keychain.add(.key(tag: "t", type: .rsa2048), data: SecretBytes(p256))
        }
        try keychain.add(.key(tag: "t", type: .p256), data: SecretBytes(p256))
        #expect(try keychain.copyData(.key(tag: "t", type: .p256)) == SecretBytes(p256))
        #expect(throws: KeychainError(.invalidArgument, "")) {
            try keychain.update(.key(tag: "t"), with: KeychainChanges(data: SecretBytes([1])))
        }
        #expect(try keychain.copyMatching(.key(tag: "t")).map(\.keyType) == [.p256])
    }

    @Test func statusCodesMapToKeychainErrors() {
        let cases: [(Int32, KeychainError.Code)] = [
            (-25300, .itemNotFound), (-25299, .duplicateItem), (-25308, .interactionNotAllowed),
            (-25293, .authenticationFailed), (-128, .authenticationFailed), (-26275, .corrupted), (-34018, .io),
        ]
        for (status, code) in cases {
            #expect(KeychainError(secStatus: status, doing: "x", message: "m")?.code == code, "\(status)")
        }
        #expect(KeychainError(secStatus: 0, doing: "x", message: "m") == nil)
    }
}
