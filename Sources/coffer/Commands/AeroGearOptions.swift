import ArgumentParser
import Coffer
import CofferCompat
import Foundation

/// What both AeroGear commands (`store import --from aerogear-plist`,
/// `convert --from aerogear-*`) take: where the app kept its salt and IV or
/// nonce (its defaults, or given in hex — neither is secret), and the app
/// user's password.
struct AeroGearOptions: ParsableArguments {
    @Option(help: "The app's defaults property list (Library/Preferences/BUNDLE-ID.plist), XML or binary.")
    var aerogearDefaults: String?

    @Option(help: "The defaults keys' prefix (PREFIX.salt, PREFIX.IV, …); import: the store file's name when absent.")
    var aerogearPrefix: String?

    @Option(help: "convert: the salt, in hex, instead of --aerogear-defaults.")
    var aerogearSalt: String?

    @Option(help: "convert: the IV (16 bytes) or nonce (24), in hex, instead of --aerogear-defaults.")
    var aerogearIV: String?

    @Option(help: "The app user's password, from this file (else asked on the terminal).")
    var aerogearPasswordFile: String?

    /// The salt and IV or nonce: from the defaults under the prefix (or
    /// `defaultPrefix`), or from hex when `hexAllowed`.
    func parameters(generation: AeroGear.Generation?, defaultPrefix: String? = nil, hexAllowed: Bool) throws
        -> AeroGear.Parameters
    {
        switch (aerogearDefaults, aerogearPrefix ?? defaultPrefix, aerogearSalt, aerogearIV) {
        case (let defaults?, let prefix?, nil, nil):
            return try AeroGear.Parameters(
                defaults: try Input.readAll(path: defaults, what: "the defaults"), prefix: prefix,
                generation: generation)
        case (nil, nil, let salt?, let iv?) where hexAllowed:
            guard let saltBytes = Hex.decode(salt), let ivBytes = Hex.decode(iv) else {
                throw ValidationError("--aerogear-salt and --aerogear-iv are hex")
            }
            return try AeroGear.Parameters(salt: saltBytes, ivOrNonce: ivBytes, generation: generation)
        default:
            throw ValidationError(
                hexAllowed
                    ? "give --aerogear-defaults with --aerogear-prefix, or --aerogear-salt with --aerogear-iv"
                    : "give --aerogear-defaults (and --aerogear-prefix unless it is the store file's name)")
        }
    }

    /// The password as the app's user typed it (text, for the UTF-16
    /// quirk), from `--aerogear-password-file`, else `fallbackFile`, else
    /// the terminal.
    func password(fallbackFile: String? = nil) throws -> String {
        let file = aerogearPasswordFile ?? fallbackFile
        let bytes = try file.map(Passphrase.read(file:)) ?? Passphrase.prompt("AeroGear password: ", confirm: false)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CLIFailure("the AeroGear password is not UTF-8 text", status: 64)
        }
        return text
    }

    /// Runs `work`, saying a wrong AeroGear password as such, not as the
    /// store's own.
    func hintingPassword<T>(_ work: () throws -> T) throws -> T {
        do {
            return try work()
        } catch let error as CofferError where error.code == .wrongPassword {
            throw CLIFailure(
                error.description,
                hint:
                    "check the AeroGear password (--aerogear-password-file FILE); a value that alone fails was damaged",
                status: ExitStatus.of(error))
        }
    }
}
