/* A stand-in for the few cv:: names ncnn's C examples use when built with
 * USE_NCNN_SIMPLEOCV (cv::Mat with data/cols/rows/empty, cv::imread). ncnn_c's own, minimal:
 * imread reads binary PPM (P6) files only, as BGR like OpenCV. Test support, not a library.
 */
#ifndef NCNN_C_TEST_SIMPLEOCV_H
#define NCNN_C_TEST_SIMPLEOCV_H

#include <stdio.h>
#include <vector>

namespace cv {

struct Mat
{
    unsigned char* data;
    int cols;
    int rows;
    std::vector<unsigned char> storage;

    Mat() : data(0), cols(0), rows(0) {}
    Mat(const Mat& o) : cols(o.cols), rows(o.rows), storage(o.storage) { data = storage.empty() ? 0 : &storage[0]; }
    Mat& operator=(const Mat& o)
    {
        cols = o.cols;
        rows = o.rows;
        storage = o.storage;
        data = storage.empty() ? 0 : &storage[0];
        return *this;
    }
    bool empty() const { return data == 0; }
};

inline Mat imread(const char* path, int flags = 1)
{
    Mat m;
    int w = 0, h = 0, maxval = 0;
    FILE* fp = fopen(path, "rb");
    (void)flags;
    if (!fp)
        return m;
    if (fscanf(fp, "P6 %d %d %d", &w, &h, &maxval) != 3 || w <= 0 || h <= 0 || maxval != 255 || fgetc(fp) == EOF)
    {
        fclose(fp);
        return m;
    }
    m.storage.resize((size_t)w * h * 3);
    if (fread(&m.storage[0], 1, m.storage.size(), fp) != m.storage.size())
    {
        fclose(fp);
        return Mat();
    }
    fclose(fp);
    for (size_t i = 0; i < m.storage.size(); i += 3)
    {
        unsigned char r = m.storage[i];
        m.storage[i] = m.storage[i + 2];
        m.storage[i + 2] = r;
    }
    m.cols = w;
    m.rows = h;
    m.data = &m.storage[0];
    return m;
}

} // namespace cv

#endif
