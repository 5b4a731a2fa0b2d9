// ChaCha20-Poly1305 through the system's libcrypto, resolved at run time.
// Only the EVP calls below are used; the library's own headers are not
// needed to build (the few constants are OpenSSL's stable ABI values).
#include "coffer_chacha.h"

#if defined(__linux__)
#include <dlfcn.h>
#include <pthread.h>
#include <limits.h>

typedef struct evp_cipher_ctx_st EVP_CIPHER_CTX;
typedef struct evp_cipher_st EVP_CIPHER;
typedef struct engine_st ENGINE;

// include/openssl/evp.h (OpenSSL 1.1 and 3.x)
#define COFFER_EVP_CTRL_AEAD_GET_TAG 0x10
#define COFFER_EVP_CTRL_AEAD_SET_TAG 0x11

static struct {
    EVP_CIPHER_CTX *(*ctx_new)(void);
    void (*ctx_free)(EVP_CIPHER_CTX *);
    const EVP_CIPHER *(*chacha20_poly1305)(void);
    int (*cipher_init)(EVP_CIPHER_CTX *, const EVP_CIPHER *, ENGINE *, const unsigned char *, const unsigned char *, int);
    int (*cipher_update)(EVP_CIPHER_CTX *, unsigned char *, int *, const unsigned char *, int);
    int (*cipher_final)(EVP_CIPHER_CTX *, unsigned char *, int *);
    int (*ctx_ctrl)(EVP_CIPHER_CTX *, int, int, void *);
    const EVP_CIPHER *cipher;
    int available;
} lib;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static pthread_key_t context_key;

static void free_context(void *context) {
    if (context) lib.ctx_free((EVP_CIPHER_CTX *)context);
}

static void load(void) {
    void *handle = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!handle) return;
    *(void **)&lib.ctx_new = dlsym(handle, "EVP_CIPHER_CTX_new");
    *(void **)&lib.ctx_free = dlsym(handle, "EVP_CIPHER_CTX_free");
    *(void **)&lib.chacha20_poly1305 = dlsym(handle, "EVP_chacha20_poly1305");
    *(void **)&lib.cipher_init = dlsym(handle, "EVP_CipherInit_ex");
    *(void **)&lib.cipher_update = dlsym(handle, "EVP_CipherUpdate");
    *(void **)&lib.cipher_final = dlsym(handle, "EVP_CipherFinal_ex");
    *(void **)&lib.ctx_ctrl = dlsym(handle, "EVP_CIPHER_CTX_ctrl");
    if (!lib.ctx_new || !lib.ctx_free || !lib.chacha20_poly1305 || !lib.cipher_init ||
        !lib.cipher_update || !lib.cipher_final || !lib.ctx_ctrl) {
        dlclose(handle);
        return;
    }
    lib.cipher = lib.chacha20_poly1305();
    if (!lib.cipher || pthread_key_create(&context_key, free_context) != 0) {
        dlclose(handle);
        return;
    }
    lib.available = 1;  // the handle stays open for the life of the process
}

int coffer_chacha_system_available(void) {
    pthread_once(&load_once, load);
    return lib.available;
}

// One cipher context per thread, made on first use and freed when the
// thread ends, so that steady-state sealing allocates nothing.
/* One context per thread, given the cipher once: later calls pass only the
 * key, nonce and direction, which OpenSSL 3 handles without fetching the
 * cipher's implementation again for every 64 KiB chunk. */
static EVP_CIPHER_CTX *thread_context(void) {
    EVP_CIPHER_CTX *context = pthread_getspecific(context_key);
    if (context) return context;
    context = lib.ctx_new();
    if (!context) return NULL;
    if (lib.cipher_init(context, lib.cipher, NULL, NULL, NULL, 1) != 1 ||
        pthread_setspecific(context_key, context) != 0) {
        lib.ctx_free(context);
        return NULL;
    }
    return context;
}

static int run(int encrypt, const uint8_t *key, const uint8_t *nonce, const uint8_t *input, size_t length,
               uint8_t *output, uint8_t *tag) {
    if (!coffer_chacha_system_available() || length > INT_MAX) return 0;
    EVP_CIPHER_CTX *context = thread_context();
    if (!context) return 0;
    int written = 0, final_written = 0;
    if (lib.cipher_init(context, NULL, NULL, key, nonce, encrypt) != 1) return 0;
    if (!encrypt && lib.ctx_ctrl(context, COFFER_EVP_CTRL_AEAD_SET_TAG, 16, tag) != 1) return 0;
    if (length > 0 && lib.cipher_update(context, output, &written, input, (int)length) != 1) return 0;
    if ((size_t)written != length) return 0;
    if (lib.cipher_final(context, output + written, &final_written) != 1 || final_written != 0) return 0;
    if (encrypt && lib.ctx_ctrl(context, COFFER_EVP_CTRL_AEAD_GET_TAG, 16, tag) != 1) return 0;
    return 1;
}

int coffer_chacha_system_seal(const uint8_t *key, const uint8_t *nonce, const uint8_t *input, size_t length,
                              uint8_t *output, uint8_t *tag) {
    return run(1, key, nonce, input, length, output, tag);
}

int coffer_chacha_system_open(const uint8_t *key, const uint8_t *nonce, const uint8_t *input, size_t length,
                              const uint8_t *tag, uint8_t *output) {
    return run(0, key, nonce, input, length, output, (uint8_t *)tag);
}

#else

int coffer_chacha_system_available(void) { return 0; }
int coffer_chacha_system_seal(const uint8_t *key, const uint8_t *nonce, const uint8_t *input, size_t length,
                              uint8_t *output, uint8_t *tag) {
    (void)key; (void)nonce; (void)input; (void)length; (void)output; (void)tag;
    return 0;
}
int coffer_chacha_system_open(const uint8_t *key, const uint8_t *nonce, const uint8_t *input, size_t length,
                              const uint8_t *tag, uint8_t *output) {
    (void)key; (void)nonce; (void)input; (void)length; (void)tag; (void)output;
    return 0;
}

#endif
