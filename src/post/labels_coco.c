/*
 * Default labels of the postprocessor families trained on one data set:
 * the 80 COCO classes in the order every YOLO export indexes them (the
 * Ultralytics / Darknet order), and "face" for SCRFD. The model layer uses
 * them when the model has no labels file (see docs/postprocessors.md).
 */
#include <string.h>

static const char COCO80[] =
    "person\nbicycle\ncar\nmotorcycle\nairplane\nbus\ntrain\ntruck\nboat\ntraffic light\n"
    "fire hydrant\nstop sign\nparking meter\nbench\nbird\ncat\ndog\nhorse\nsheep\ncow\n"
    "elephant\nbear\nzebra\ngiraffe\nbackpack\numbrella\nhandbag\ntie\nsuitcase\nfrisbee\n"
    "skis\nsnowboard\nsports ball\nkite\nbaseball bat\nbaseball glove\nskateboard\nsurfboard\n"
    "tennis racket\nbottle\nwine glass\ncup\nfork\nknife\nspoon\nbowl\nbanana\napple\n"
    "sandwich\norange\nbroccoli\ncarrot\nhot dog\npizza\ndonut\ncake\nchair\ncouch\n"
    "potted plant\nbed\ndining table\ntoilet\ntv\nlaptop\nmouse\nremote\nkeyboard\n"
    "cell phone\nmicrowave\noven\ntoaster\nsink\nrefrigerator\nbook\nclock\nvase\nscissors\n"
    "teddy bear\nhair drier\ntoothbrush\n";

/* The built-in labels ('\n'-separated, static) of a postprocessor, or NULL. */
const char *osp_post_default_labels(const char *postprocessor);

const char *osp_post_default_labels(const char *postprocessor) {
    static const char *const coco[] = {"yolo", "yolox", "yolonas"};
    if (!postprocessor) return NULL;
    for (size_t i = 0; i < sizeof coco / sizeof coco[0]; i++)
        if (strcmp(postprocessor, coco[i]) == 0) return COCO80;
    /* the face detectors' one class */
    if (strcmp(postprocessor, "scrfd") == 0 || strcmp(postprocessor, "ultraface") == 0 ||
        strcmp(postprocessor, "blazeface") == 0)
        return "face\n";
    return NULL;
}
