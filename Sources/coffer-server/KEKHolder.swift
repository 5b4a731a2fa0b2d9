#if Server
import ArgumentParser
import Coffer
import CofferPKCS11

extension DataOptions {
    /// The HSM key that seals the KEK ring, when --kek-pkcs11-module (or
    /// kek.pkcs11.module) is given: then the token, the key's label and
    /// the PIN file are required, and no other way to unlock the ring.
    func kekHSM(_ settings: ServerSettings) throws -> PKCS11Key? {
        guard let module = settings.value(kekPkcs11Module, "kek.pkcs11.module") else {
            for (value, key, flag) in [
                (kekPkcs11Token, "kek.pkcs11.token", "--kek-pkcs11-token"),
                (kekPkcs11Key, "kek.pkcs11.key", "--kek-pkcs11-key"),
                (kekPkcs11PinFile, "kek.pkcs11.pin.file", "--kek-pkcs11-pin-file"),
            ] where settings.value(value, key) != nil {
                throw ValidationError("\(flag) goes with --kek-pkcs11-module")
            }
            return nil
        }
        guard settings.value(kekPassphraseFile, "kek.passphrase.file") == nil,
            settings.value(kekKeychain, "kek.keychain") == nil
        else {
            throw ValidationError("give one of --kek-passphrase-file, --kek-keychain and --kek-pkcs11-module")
        }
        let token = try settings.required(kekPkcs11Token, "kek.pkcs11.token", flag: "--kek-pkcs11-token")
        let label = try settings.required(kekPkcs11Key, "kek.pkcs11.key", flag: "--kek-pkcs11-key")
        let pinFile = try settings.required(kekPkcs11PinFile, "kek.pkcs11.pin.file", flag: "--kek-pkcs11-pin-file")
        let pin = try ServerFiles.passphrase(pinFile, what: "the PIN file")
        return PKCS11Key(module: module, token: token, label: label, pin: pin)
    }
}
#endif
