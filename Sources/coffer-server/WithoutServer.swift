#if !Server
import CofferKeyServerCore
import Foundation

/// coffer-server as built without the Server trait (the package's
/// default, so that apps resolve no server stack): it says how to get the
/// real one.
@main
enum CofferServerWithoutTrait {
    static func main() {
        FileHandle.standardError.write(
            Data(
                """
                coffer-server: this build has no server: build it with the Server trait, \
                swift build --traits Server (docs/packages.md)

                """.utf8))
        exit(69)
    }
}
#endif
