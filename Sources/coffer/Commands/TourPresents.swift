import Coffer
import CofferStore
import Foundation

extension Tour {
    /// The seed's presents list: a store under a passphrase, presents with
    /// a sealed description bound to the clear "to", listed by "to", found
    /// by an indexed sealed field, opened only with the passphrase.
    func presents(in path: String) throws {
        let schema = try StoreSchema(tables: [
            .init(
                name: "presents", primaryKey: "id",
                fields: [
                    .init(name: "id", type: .integer),
                    .init(name: "to", type: .text),
                    .init(name: "description", type: .text, sealed: true, bind: ["to"]),
                    .init(
                        name: "shop", type: .text, sealed: true,
                        indexes: [.init(name: "shop_exact", transforms: [.trim, .lowercase], bits: 8)]),
                ])
        ])
        // The tour's passphrase and a lighter scrypt (N = 2^15) keep it quick;
        // `coffer store init` uses N = 2^17.
        let passphrase = UnlockSecret.password(Array("tour passphrase".utf8))
        let store = try RecordStore.create(
            sqlite: path, schema: schema, secret: passphrase, kdf: .scrypt(logN: 15, r: 8, p: 1))
        try store.put(
            contentsOf: [
                ["to": .text("Grandma"), "description": .text("a knitted scarf"), "shop": .text("Wool & Co")],
                ["to": .text("Sam"), "description": .text("a red kite"), "shop": .text("Toy Barn")],
                ["to": .text("Grandma"), "description": .text("jasmine tea"), "shop": .text("wool & co ")],
            ], into: "presents")
        step("made presents.sqlite: 3 presents, descriptions and shops sealed", nil)

        let reopened = try RecordStore.open(sqlite: path, secret: passphrase)
        let forGrandma = try reopened.find("presents", where: "to", equals: .text("Grandma"))
        let descriptions = forGrandma.compactMap { record -> String? in
            record["description"]?.textValue
        }
        try check(descriptions.sorted() == ["a knitted scarf", "jasmine tea"], "the presents for Grandma differ")
        step("listed the presents to Grandma (\"to\" is clear)", descriptions.joined(separator: ", "))

        let fromShop = try reopened.find("presents", where: "shop", equals: .text("WOOL & CO"))
        try check(fromShop.count == 2, "the blind index found \(fromShop.count) presents, not 2")
        step("found the presents from \"WOOL & CO\" through the shop's blind index", "\(fromShop.count) presents")

        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try check(bytes.range(of: Data("knitted".utf8)) == nil, "a sealed description is in the file")
        do {
            _ = try RecordStore.open(sqlite: path, secret: .password(Array("a guess".utf8)))
            throw CLIFailure("the store opened with the wrong passphrase")
        } catch let error as CofferError where error.code == .wrongPassword {}
        step("no description is readable in the file; a wrong passphrase opens nothing", nil)
    }
}
