#include "CCofferPKCS11.h"
#include <stddef.h>

typedef coffer_ck_rv (*coffer_get_function_list)(coffer_ck_function_list **list);

coffer_ck_rv coffer_pkcs11_function_list(void *get_function_list, coffer_ck_function_list **list) {
    *list = NULL;
    coffer_ck_rv result = ((coffer_get_function_list)get_function_list)(list);
    if (result == 0 && *list == NULL) return 5;
    return result;
}

// The specification numbers C_Initialize 0, C_Decrypt 34, C_GenerateKey 58;
// each entry is one pointer after the two-byte version (padded to one).
_Static_assert(offsetof(coffer_ck_function_list, initialize) == sizeof(void *), "C_Initialize");
_Static_assert(offsetof(coffer_ck_function_list, decrypt) == 35 * sizeof(void *), "C_Decrypt");
_Static_assert(offsetof(coffer_ck_function_list, generate_key) == 59 * sizeof(void *), "C_GenerateKey");
