import ArgumentParser
import Coffer
import CofferCompat
import CofferStore
import Crypto
import CryptoExtras
import Foundation

/// `coffer tour presents`: seed 003's own data moved. The tour writes what
/// the AeroGear "Xmas" app left on a phone (its PLIST store and its
/// defaults, as AeroGear-Crypto 0.1 sealed them), then migrates it into a
/// CofferStore the way `coffer store import --from aerogear-plist` does.
struct TourPresents: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "presents",
        abstract:
            "A tour of migrating the seed's AeroGear Xmas data into a store: \"to whom\" searchable, descriptions sealed.",
        discussion:
            "Makes the app's files itself (no phone needed), works in a new temporary directory and removes what it made unless --keep is given."
    )

    @Flag(help: "Keep the tour's directory and print where it is.")
    var keep = false

    static let gifts = [
        ("Grandma", "a knitted scarf"), ("Sam", "a red kite"), ("Grandma", "jasmine tea"), ("Zoë", "a red kite"),
    ]

    func run() throws {
        let directory = try TourDirectory("tour-presents", keep: keep)
        let path = directory.path
        let tour = Tour()

        // 1. What the Xmas app wrote: one salt and one IV for every present.
        let password = "Père Noël"
        try XmasApp.write(
            gifts: Self.gifts, password: password, store: path("xmas"), defaults: path("defaults.plist"))
        let old = try AeroGear.PropertyListStore(propertyList: try Input.readAll(path: path("xmas"), what: "the store"))
        let kites = old.records.filter { $0.fields["toWhom"] == .text("Sam") || $0.fields["toWhom"] == .text("Zoë") }
        try tour.check(kites.count == 2 && kites[0].fields["description"] == kites[1].fields["description"], "kites")
        tour.step(
            "wrote what the AeroGear Xmas app left on a phone: Documents/xmas and its defaults",
            "\(old.records.count) presents, descriptions AES-128-CBC under one IV: Sam's and Zoë's kites are the same bytes"
        )

        // 2. Read it all before anything is written: a wrong password stops here.
        let parameters = try AeroGear.Parameters(
            defaults: try Input.readAll(path: path("defaults.plist"), what: "the defaults"), prefix: "xmas")
        do {
            _ = try AeroGear.open(old, parameters: parameters, password: "Pere Noel")
            throw CLIFailure("tour failed: a wrong password opened the Xmas data")
        } catch let error as CofferError where error.code == .wrongPassword {}
        let opened = try AeroGear.open(old, parameters: parameters, password: password)
        tour.step(
            "opened every description with the app user's password (\(parameters.generation), AeroGear-Crypto 0.1)",
            "a wrong password opened none; CBC has no MAC, so padding and UTF-8 are all that is checked")

        // 3. Into a store: "toWhom" clear, the description sealed and bound to it.
        let schema = try StoreSchema(tables: [
            .init(
                name: "presents", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .text), .init(name: "toWhom", type: .text),
                    .init(name: "description", type: .text, sealed: true, bind: ["toWhom"]),
                ])
        ])
        let secret = UnlockSecret.password(Array("tour passphrase".utf8))
        let store = try RecordStore.create(
            sqlite: path("presents.sqlite"), schema: schema, secret: secret, kdf: .scrypt(logN: 15, r: 8, p: 1))
        let table = try store.schema.table("presents")
        let keys = try store.put(
            contentsOf: try opened.map { try StoreImport.storeRecord($0, table: table) }, into: "presents")
        tour.step(
            "moved them into presents.sqlite in one transaction",
            "\(keys.count) records; each description sealed under its own nonce, the shared IV gone")

        let reopened = try RecordStore.open(sqlite: path("presents.sqlite"), secret: secret)
        let forGrandma = try reopened.find("presents", where: "toWhom", equals: .text("Grandma")).compactMap {
            record -> String? in
            record["description"]?.textValue
        }
        try tour.check(forGrandma.sorted() == ["a knitted scarf", "jasmine tea"], "Grandma's presents differ")
        tour.step("listed the presents to Grandma (\"toWhom\" is clear)", forGrandma.sorted().joined(separator: ", "))

        let file = try Data(contentsOf: URL(fileURLWithPath: path("presents.sqlite")))
        for (_, description) in Self.gifts {
            try tour.check(file.range(of: Data(description.utf8)) == nil, "\(description) is readable in the store")
        }
        tour.step(
            "no description is readable in the store's file",
            "the migration is `coffer store import --from aerogear-plist` (docs/compat.md)")
        directory.finish()
    }
}

/// What the seed's Xmas app did with AeroGear-Crypto 0.1 (facts from
/// AeroGear's published sources, docs/compat.md): AGPBKDF2 over the
/// password (160 bytes), AES-128-CBC with PKCS#7 under its first 16 bytes
/// and one IV kept in the defaults, the records written as an XML property
/// list. Here only to make the tour's old data.
enum XmasApp {
    static func write(gifts: [(String, String)], password: String, store: String, defaults: String) throws {
        // AGRandomGenerator's 16 random bytes, from swift-crypto's CSPRNG.
        let salt = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        let iv = SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }
        let key = try AeroGear.key(password: password, salt: salt, generation: .cbc)
        let aesKey = SymmetricKey(data: key.withUnsafeBytes { Array($0.prefix(16)) })
        let records: [[String: Any]] = try gifts.map { toWhom, description in
            let sealed = try AES._CBC.encrypt(Array(description.utf8), using: aesKey, iv: AES._CBC.IV(ivBytes: iv))
            return ["id": UUID().uuidString, "toWhom": toWhom, "description": Data(sealed)]
        }
        try PropertyListSerialization.data(fromPropertyList: records, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: store))
        try PropertyListSerialization.data(
            fromPropertyList: ["xmas.salt": Data(salt), "xmas.IV": Data(iv)], format: .binary, options: 0
        ).write(to: URL(fileURLWithPath: defaults))
    }
}
