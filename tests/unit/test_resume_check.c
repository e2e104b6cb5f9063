/*
 * Unit tests of the resume check shared by the resume_mismatch detector and
 * the resume gate (detectors/resume_check.c).
 */
#include "gwcheck.h"
#include <stdio.h>
#include <string.h>

#include "resume_check.h"

static json_t *J(const char *s)
{
	json_t *j = json_loads(s, 0, NULL);
	ck_assert_ptr_nonnull(j);
	return j;
}

static const char *CKPT =
	"{\"optimizer\":\"AdamW\",\"param_names_sha256\":\"aaaa1111\","
	"\"optimizer_state_keys\":[\"exp_avg\",\"exp_avg_sq\",\"step\"],"
	"\"hparams\":{\"lr\":0.001,\"betas\":[0.9,0.95],\"weight_decay\":0.05,\"eps\":1e-08}}";

static json_t *diff(const char *ck, const char *live)
{
	json_t *c = ck ? J(ck) : NULL, *l = J(live);
	json_t *d = gw_resume_diff(c, l);
	json_decref(c);
	json_decref(l);
	return d;
}

static const char *kind_of(json_t *d, size_t i)
{
	return json_string_value(json_object_get(json_array_get(d, i), "kind"));
}

START_TEST(correct_resume_matches)
{
	/* the lr differs (the schedule moved it), key order differs: still a match */
	json_t *d = diff(CKPT, "{\"optimizer\":\"AdamW\",\"param_names_sha256\":\"aaaa1111\","
	                       "\"optimizer_state_keys\":[\"step\",\"exp_avg\",\"exp_avg_sq\"],"
	                       "\"optimizer_state_loaded\":true,"
	                       "\"hparams\":{\"lr\":0.0009,\"eps\":1.0000000000001e-08,\"betas\":[0.9,0.95],\"weight_decay\":0.05}}");
	ck_assert_int_eq(json_array_size(d), 0);
	json_decref(d);
}
END_TEST

START_TEST(fresh_optimizer)
{
	json_t *d = diff(CKPT, "{\"optimizer\":\"AdamW\",\"param_names_sha256\":\"aaaa1111\","
	                       "\"optimizer_state_keys\":[],\"optimizer_state_loaded\":false,"
	                       "\"hparams\":{\"lr\":0.001,\"betas\":[0.9,0.95],\"weight_decay\":0.05,\"eps\":1e-08}}");
	ck_assert_int_eq(json_array_size(d), 2);
	ck_assert_str_eq(kind_of(d, 0), "state");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_array_get(d, 1), "message")),
	                             "empty after the resume"));
	json_decref(d);
	/* "loaded: true" but empty: the flag lies, the keys tell */
	d = diff(CKPT, "{\"optimizer\":\"AdamW\",\"param_names_sha256\":\"aaaa1111\","
	               "\"optimizer_state_keys\":[],\"optimizer_state_loaded\":true}");
	ck_assert_int_eq(json_array_size(d), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(d, 0), "field")),
	                 "optimizer_state_keys");
	json_decref(d);
}
END_TEST

START_TEST(other_optimizer_and_params)
{
	json_t *d = diff(CKPT, "{\"optimizer\":\"SGD\",\"param_names_sha256\":\"bbbb2222\","
	                       "\"optimizer_state_keys\":[],\"optimizer_state_loaded\":false,"
	                       "\"hparams\":{\"lr\":0.001,\"momentum\":0.9}}");
	ck_assert_str_eq(kind_of(d, 0), "optimizer");
	ck_assert_str_eq(kind_of(d, 1), "params");
	/* no hparams noise when the class differs */
	for (size_t i = 0; i < json_array_size(d); i++)
		ck_assert_str_ne(kind_of(d, i), "hparams");
	json_decref(d);
	d = diff("{\"param_names_sha256\":\"aaaa1111\"}", "{\"optimizer\":\"AdamW\"}");
	ck_assert_str_eq(kind_of(d, 0), "optimizer");   /* the checkpoint recorded no class */
	json_decref(d);
}
END_TEST

START_TEST(hparams)
{
	json_t *d = diff(CKPT, "{\"optimizer\":\"AdamW\",\"param_names_sha256\":\"aaaa1111\","
	                       "\"optimizer_state_keys\":[\"exp_avg\",\"exp_avg_sq\",\"step\"],"
	                       "\"optimizer_state_loaded\":true,"
	                       "\"hparams\":{\"lr\":0.001,\"betas\":[0.9,0.999],\"weight_decay\":0.05,\"eps\":1e-08,\"amsgrad\":true}}");
	ck_assert_int_eq(json_array_size(d), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(d, 0), "field")), "hparams.betas");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(d, 0), "message")),
	                 "betas [0.9, 0.95] \u2192 [0.9, 0.999]");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(d, 1), "field")), "hparams.amsgrad");
	json_decref(d);
}
END_TEST

START_TEST(no_checkpoint)
{
	json_t *d = diff(NULL, "{\"optimizer\":\"AdamW\",\"optimizer_state_keys\":[\"exp_avg\"],"
	                       "\"optimizer_state_loaded\":true}");
	ck_assert_int_eq(json_array_size(d), 0);
	json_decref(d);
	d = diff(NULL, "{\"optimizer\":\"AdamW\",\"optimizer_state_keys\":[],\"optimizer_state_loaded\":true}");
	ck_assert_int_eq(json_array_size(d), 1);
	json_decref(d);
	/* plain SGD keeps no state: nothing to say */
	d = diff(NULL, "{\"optimizer\":\"SGD\",\"optimizer_state_keys\":[],\"optimizer_state_loaded\":true,"
	               "\"hparams\":{\"momentum\":0}}");
	ck_assert_int_eq(json_array_size(d), 0);
	json_decref(d);
}
END_TEST

/* Found by fuzz/fuzz_resume.c: a difference whose message or field was cut
 * inside a UTF-8 character (a long non-ASCII hyperparameter name or value,
 * a non-ASCII parameter-name hash) was dropped, since jansson refuses such
 * text: the gate then said "ok" for a resume that was not. */
START_TEST(long_utf8_differences_are_reported)
{
	char key[256] = "", ck[1024], live[1024];
	for (int i = 0; i < 60; i++)
		strcat(key, "\xc3\xa9");
	snprintf(ck, sizeof(ck), "{\"optimizer\":\"AdamW\",\"param_names_sha256\":\"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\","
	         "\"hparams\":{\"%s\":\"%s\"}}", key, key);
	snprintf(live, sizeof(live), "{\"optimizer\":\"AdamW\",\"param_names_sha256\":\"\xc3\xa8\xc3\xa8\xc3\xa8\xc3\xa8\xc3\xa8\","
	         "\"hparams\":{\"%s\":\"%s!\"}}", key, key);
	json_t *d = diff(ck, live);
	ck_assert_int_eq(json_array_size(d), 2);
	ck_assert_str_eq(kind_of(d, 0), "params");
	ck_assert_str_eq(kind_of(d, 1), "hparams");
	json_decref(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("resume_check");
	TCase *tc = tcase_create("diff");
	tcase_add_test(tc, correct_resume_matches);
	tcase_add_test(tc, fresh_optimizer);
	tcase_add_test(tc, other_optimizer_and_params);
	tcase_add_test(tc, hparams);
	tcase_add_test(tc, no_checkpoint);
	tcase_add_test(tc, long_utf8_differences_are_reported);
	suite_add_tcase(s, tc);
	return gw_check_run(s);
}
