#ifndef COFFER_PKCS11_H
#define COFFER_PKCS11_H

// The few PKCS#11 (Cryptoki) types and functions Coffer calls, declared
// from the OASIS PKCS#11 specification (v2.40, section 3 and 5) rather
// than a vendor's header: the function list's entries are in the
// specification's order, each unused one kept as an untyped pointer so
// the offsets of the used ones are right. Unix layout: CK_ULONG is
// unsigned long and structures are not packed.

typedef unsigned long coffer_ck_ulong;

typedef struct {
    unsigned char major;
    unsigned char minor;
} coffer_ck_version;

typedef struct {
    coffer_ck_ulong type;
    void *value;
    coffer_ck_ulong value_len;
} coffer_ck_attribute;

typedef struct {
    coffer_ck_ulong mechanism;
    void *parameter;
    coffer_ck_ulong parameter_len;
} coffer_ck_mechanism;

typedef struct {
    unsigned char *iv;
    coffer_ck_ulong iv_len;
    coffer_ck_ulong iv_bits;
    unsigned char *aad;
    coffer_ck_ulong aad_len;
    coffer_ck_ulong tag_bits;
} coffer_ck_gcm_params;

typedef struct {
    void *create_mutex;
    void *destroy_mutex;
    void *lock_mutex;
    void *unlock_mutex;
    coffer_ck_ulong flags;
    void *reserved;
} coffer_ck_initialize_args;

typedef struct {
    unsigned char label[32];
    unsigned char manufacturer[32];
    unsigned char model[16];
    unsigned char serial[16];
    coffer_ck_ulong flags;
    coffer_ck_ulong counts[10];
    coffer_ck_version hardware;
    coffer_ck_version firmware;
    unsigned char time[16];
} coffer_ck_token_info;

typedef coffer_ck_ulong coffer_ck_rv;

typedef struct {
    coffer_ck_version version;
    coffer_ck_rv (*initialize)(void *arguments);
    coffer_ck_rv (*finalize)(void *reserved);
    void *get_info;
    void *get_function_list;
    coffer_ck_rv (*get_slot_list)(unsigned char token_present, coffer_ck_ulong *slots, coffer_ck_ulong *count);
    void *get_slot_info;
    coffer_ck_rv (*get_token_info)(coffer_ck_ulong slot, coffer_ck_token_info *info);
    void *get_mechanism_list;
    void *get_mechanism_info;
    void *init_token;
    void *init_pin;
    void *set_pin;
    coffer_ck_rv (*open_session)(coffer_ck_ulong slot, coffer_ck_ulong flags, void *application, void *notify,
                                 coffer_ck_ulong *session);
    coffer_ck_rv (*close_session)(coffer_ck_ulong session);
    void *close_all_sessions;
    void *get_session_info;
    void *get_operation_state;
    void *set_operation_state;
    coffer_ck_rv (*login)(coffer_ck_ulong session, coffer_ck_ulong user, const unsigned char *pin,
                          coffer_ck_ulong pin_len);
    coffer_ck_rv (*logout)(coffer_ck_ulong session);
    void *create_object;
    void *copy_object;
    void *destroy_object;
    void *get_object_size;
    coffer_ck_rv (*get_attribute_value)(coffer_ck_ulong session, coffer_ck_ulong object,
                                        coffer_ck_attribute *attributes, coffer_ck_ulong count);
    void *set_attribute_value;
    coffer_ck_rv (*find_objects_init)(coffer_ck_ulong session, coffer_ck_attribute *attributes,
                                      coffer_ck_ulong count);
    coffer_ck_rv (*find_objects)(coffer_ck_ulong session, coffer_ck_ulong *objects, coffer_ck_ulong maximum,
                                 coffer_ck_ulong *count);
    coffer_ck_rv (*find_objects_final)(coffer_ck_ulong session);
    coffer_ck_rv (*encrypt_init)(coffer_ck_ulong session, coffer_ck_mechanism *mechanism, coffer_ck_ulong key);
    coffer_ck_rv (*encrypt)(coffer_ck_ulong session, const unsigned char *data, coffer_ck_ulong data_len,
                            unsigned char *output, coffer_ck_ulong *output_len);
    void *encrypt_update;
    void *encrypt_final;
    coffer_ck_rv (*decrypt_init)(coffer_ck_ulong session, coffer_ck_mechanism *mechanism, coffer_ck_ulong key);
    coffer_ck_rv (*decrypt)(coffer_ck_ulong session, const unsigned char *data, coffer_ck_ulong data_len,
                            unsigned char *output, coffer_ck_ulong *output_len);
    // decrypt_update .. decrypt_verify_update: 23 entries Coffer does not call.
    void *unused[23];
    coffer_ck_rv (*generate_key)(coffer_ck_ulong session, coffer_ck_mechanism *mechanism,
                                 coffer_ck_attribute *attributes, coffer_ck_ulong count, coffer_ck_ulong *key);
} coffer_ck_function_list;

/// Calls a module's C_GetFunctionList (the symbol dlsym found): 0 and
/// `*list` set on success, the module's CK_RV otherwise; 5 (general
/// error) when it answered success with no list.
coffer_ck_rv coffer_pkcs11_function_list(void *get_function_list, coffer_ck_function_list **list);

#endif
