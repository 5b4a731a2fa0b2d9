// libsecret (the Secret Service client: GNOME Keyring, KWallet), for
// SecretServiceKeychain. Built only with the SecretService package trait.
#include <libsecret/secret.h>
