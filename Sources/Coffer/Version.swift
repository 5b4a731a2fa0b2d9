/// Coffer's version, as `coffer --version` and `coffer-server --version`
/// print it and the key server logs it at start.
public enum CofferVersion {
    public static let string = "0.1.0"
}
