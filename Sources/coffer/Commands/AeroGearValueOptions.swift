import ArgumentParser
import Coffer
import CofferCompat
import Foundation

/// Where `convert --from aerogear-*` finds the salt and the IV or nonce:
/// the app's defaults, or given in hex (neither is secret).
struct AeroGearValueOptions: ParsableArguments {
    @Option(name: .customLong("aerogear-defaults"), help: "aerogear-*: the app's defaults property list.")
    var defaults: String?

    @Option(name: .customLong("aerogear-prefix"), help: "aerogear-*: the defaults keys' prefix (PREFIX.salt, …).")
    var prefix: String?

    @Option(name: .customLong("aerogear-salt"), help: "aerogear-*: the salt, in hex, instead of --aerogear-defaults.")
    var salt: String?

    @Option(
        name: .customLong("aerogear-iv"),
        help: "aerogear-*: the IV (16 bytes) or nonce (24), in hex, instead of --aerogear-defaults.")
    var iv: String?

    /// One stored value opened, checked as its generation allows; CBC is
    /// said to be unauthenticated.
    func open(_ sealed: [UInt8], generation: AeroGear.Generation, passwordFile: String?) throws -> Data {
        let parameters: AeroGear.Parameters
        switch (defaults, prefix, salt, iv) {
        case (let defaults?, let prefix?, nil, nil):
            parameters = try AeroGear.Parameters(
                defaults: try Input.readAll(path: defaults, what: "the defaults"), prefix: prefix,
                generation: generation)
        case (nil, nil, let salt?, let iv?):
            guard let saltBytes = Hex.decode(salt), let ivBytes = Hex.decode(iv) else {
                throw ValidationError("--aerogear-salt and --aerogear-iv are hex")
            }
            parameters = try AeroGear.Parameters(salt: saltBytes, ivOrNonce: ivBytes, generation: generation)
        default:
            throw ValidationError(
                "give --aerogear-defaults with --aerogear-prefix, or --aerogear-salt with --aerogear-iv")
        }
        let password = try StoreImport.password(file: passwordFile)
        let key = try AeroGear.key(password: password, salt: parameters.salt, generation: generation)
        let plaintext = try StoreImport.hintingPassword {
            try AeroGear.open(sealed, ivOrNonce: parameters.ivOrNonce, key: key, generation: generation)
        }
        if generation == .cbc {
            StandardError.write(
                "coffer: warning: AeroGear CBC data has no MAC; the converted plaintext was unauthenticated (only its padding and UTF-8 were checked)\n"
            )
        }
        return plaintext
    }
}
