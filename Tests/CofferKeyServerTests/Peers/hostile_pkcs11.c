// A PKCS#11 module that answers wrongly on purpose, one way per build
// (-DHOSTILE_MODE=N), for HSMModuleTests: Coffer must turn each answer into
// a clear error, never a crash, a hang or a read past a buffer. Built by
// the test with the system's C compiler, against Coffer's own declarations
// (Sources/CCofferPKCS11/include). Its one token is labelled "hostile" and
// holds one AES key, handle 7.
#include <string.h>
#include "CCofferPKCS11.h"

enum {
    SAME_LENGTH = 0, VERSION_NINE, NO_LIST, NULL_FUNCTIONS, MANY_SLOTS, SLOT_COUNT_GROWS, LABEL_GARBAGE,
    PIN_REFUSED, EXTRACTABLE_KEY, UNAVAILABLE_ATTRIBUTES, TWO_KEYS, LONG_ANSWER, SHORT_ANSWER, GENERAL_ERROR,
    BAD_TAG,
};

static int slot_calls = 0;
unsigned long hostile_logins = 0;

static coffer_ck_rv initialize(void *arguments) { (void)arguments; return 0; }
static coffer_ck_rv finalize(void *reserved) { (void)reserved; return 0; }

static coffer_ck_rv get_slot_list(unsigned char present, coffer_ck_ulong *slots, coffer_ck_ulong *count) {
    (void)present;
    if (HOSTILE_MODE == GENERAL_ERROR) return 5;
    if (HOSTILE_MODE == MANY_SLOTS) { *count = 1UL << 40; return 0; }
    slot_calls++;
    if (slots) slots[0] = 0;
    // Says more slots on the second call than it was given room for (and writes only one).
    *count = (HOSTILE_MODE == SLOT_COUNT_GROWS && slots) ? 1000 : 1;
    return 0;
}

static coffer_ck_rv get_token_info(coffer_ck_ulong slot, coffer_ck_token_info *info) {
    (void)slot;
    memset(info, ' ', sizeof *info);
    if (HOSTILE_MODE == LABEL_GARBAGE) memset(info->label, 0xFF, sizeof info->label);
    else memcpy(info->label, "hostile", 7);
    return 0;
}

static coffer_ck_rv open_session(coffer_ck_ulong slot, coffer_ck_ulong flags, void *application, void *notify,
                                 coffer_ck_ulong *session) {
    (void)slot; (void)flags; (void)application; (void)notify;
    *session = 42;
    return 0;
}

static coffer_ck_rv close_session(coffer_ck_ulong session) { (void)session; return 0; }

static coffer_ck_rv login(coffer_ck_ulong session, coffer_ck_ulong user, const unsigned char *pin, coffer_ck_ulong n) {
    (void)session; (void)user; (void)pin; (void)n;
    hostile_logins++;
    return HOSTILE_MODE == PIN_REFUSED ? 0xA0 : 0;
}

static coffer_ck_rv logout(coffer_ck_ulong session) { (void)session; return 0; }

static coffer_ck_rv get_attribute_value(coffer_ck_ulong session, coffer_ck_ulong object,
                                        coffer_ck_attribute *attributes, coffer_ck_ulong count) {
    (void)session; (void)object;
    for (coffer_ck_ulong i = 0; i < count; i++) {
        coffer_ck_attribute *a = &attributes[i];
        if (HOSTILE_MODE == UNAVAILABLE_ATTRIBUTES) { a->value_len = (coffer_ck_ulong)-1; continue; }
        if (a->type == 0x103) *(unsigned char *)a->value = HOSTILE_MODE == EXTRACTABLE_KEY ? 0 : 1;  // sensitive
        if (a->type == 0x162) *(unsigned char *)a->value = HOSTILE_MODE == EXTRACTABLE_KEY ? 1 : 0;  // extractable
        if (a->type == 0x161) *(coffer_ck_ulong *)a->value = 32;                                     // value length
    }
    return 0;
}

static coffer_ck_rv find_objects_init(coffer_ck_ulong session, coffer_ck_attribute *attributes, coffer_ck_ulong n) {
    (void)session; (void)attributes; (void)n;
    return 0;
}

static coffer_ck_rv find_objects(coffer_ck_ulong session, coffer_ck_ulong *objects, coffer_ck_ulong maximum,
                                 coffer_ck_ulong *count) {
    (void)session;
    objects[0] = 7;
    if (HOSTILE_MODE == TWO_KEYS && maximum > 1) { objects[1] = 8; *count = 2; } else *count = 1;
    return 0;
}

static coffer_ck_rv find_objects_final(coffer_ck_ulong session) { (void)session; return 0; }

static coffer_ck_rv operation_init(coffer_ck_ulong session, coffer_ck_mechanism *mechanism, coffer_ck_ulong key) {
    (void)session; (void)mechanism; (void)key;
    return 0;
}

static coffer_ck_rv operation(coffer_ck_ulong session, const unsigned char *data, coffer_ck_ulong length,
                              unsigned char *output, coffer_ck_ulong *output_length) {
    (void)session; (void)data; (void)output;
    if (HOSTILE_MODE == BAD_TAG) return 0x40;
    if (HOSTILE_MODE == LONG_ANSWER) { *output_length = 4096; return 0; }
    if (HOSTILE_MODE == SHORT_ANSWER) { *output_length = 3; return 0; }
    *output_length = length;  // SAME_LENGTH: neither what encryption nor decryption makes
    return 0;
}

static coffer_ck_rv generate_key(coffer_ck_ulong session, coffer_ck_mechanism *mechanism,
                                 coffer_ck_attribute *attributes, coffer_ck_ulong count, coffer_ck_ulong *key) {
    (void)session; (void)mechanism; (void)attributes; (void)count;
    *key = 7;
    return 0;
}

static coffer_ck_function_list functions;

coffer_ck_rv C_GetFunctionList(coffer_ck_function_list **list) {
    if (HOSTILE_MODE == NO_LIST) { *list = 0; return 0; }
    memset(&functions, 0, sizeof functions);
    functions.version.major = HOSTILE_MODE == VERSION_NINE ? 9 : 2;
    functions.version.minor = 40;
    functions.initialize = initialize;
    functions.finalize = finalize;
    if (HOSTILE_MODE != NULL_FUNCTIONS) {
        functions.get_slot_list = get_slot_list;
        functions.get_token_info = get_token_info;
        functions.open_session = open_session;
        functions.close_session = close_session;
        functions.login = login;
        functions.logout = logout;
        functions.get_attribute_value = get_attribute_value;
        functions.find_objects_init = find_objects_init;
        functions.find_objects = find_objects;
        functions.find_objects_final = find_objects_final;
        functions.encrypt_init = operation_init;
        functions.encrypt = operation;
        functions.decrypt_init = operation_init;
        functions.decrypt = operation;
        functions.generate_key = generate_key;
    }
    *list = &functions;
    return 0;
}
