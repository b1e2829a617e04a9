
#include <stdlib.h>
#include <string.h>
#include <shaderc/shaderc.h>

typedef struct ncnnc_result ncnnc_result;

static shaderc_compiler_t g_compiler = NULL;
static shaderc_compile_options_t g_options[2] = {NULL, NULL};

const char ncnnc_build_stamp[] = "NCNNC_STAMP:@STAMP@";

int ncnnc_init(void)
{
    int i;
    if (g_compiler)
        return 0;
    g_compiler = shaderc_compiler_initialize();
    if (!g_compiler)
        return -1;
    for (i = 0; i < 2; i++)
    {
        shaderc_compile_options_t o = shaderc_compile_options_initialize();
        if (!o)
            return -1;
        shaderc_compile_options_set_source_language(o, shaderc_source_language_glsl);
        shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
        shaderc_compile_options_set_target_spirv(o, shaderc_spirv_version_1_3);
        shaderc_compile_options_set_optimization_level(o, i ? shaderc_optimization_level_performance : shaderc_optimization_level_zero);
        g_options[i] = o;
    }
    return 0;
}

ncnnc_result* ncnnc_compile(const char* source, size_t length, const char* name, int optimize)
{
    if (ncnnc_init() != 0)
        return NULL;
    return (ncnnc_result*)shaderc_compile_into_spv(g_compiler, source, length, shaderc_compute_shader,
                                                   name, "main", g_options[optimize ? 1 : 0]);
}

int ncnnc_result_ok(const ncnnc_result* r)
{
    return shaderc_result_get_compilation_status((shaderc_compilation_result_t)r) == shaderc_compilation_status_success;
}

size_t ncnnc_result_size(const ncnnc_result* r)
{
    return shaderc_result_get_length((shaderc_compilation_result_t)r);
}

const char* ncnnc_result_bytes(const ncnnc_result* r)
{
    return shaderc_result_get_bytes((shaderc_compilation_result_t)r);
}

const char* ncnnc_result_message(const ncnnc_result* r)
{
    return shaderc_result_get_error_message((shaderc_compilation_result_t)r);
}

void ncnnc_result_free(ncnnc_result* r)
{
    shaderc_result_release((shaderc_compilation_result_t)r);
}
