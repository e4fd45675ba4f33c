/*
 * text: small helpers on short strings that more than one module needs.
 */
#ifndef OSP_BASE_TEXT_H
#define OSP_BASE_TEXT_H

/* The edit distance of a and b, letters compared without case
 * ("Confidence" is one edit from "confidenc"), for a "did you mean" that
 * names the nearest known key; 99 when either is longer than 63 bytes. */
int osp_text_distance(const char *a, const char *b);

#endif
