# A 28x28 image (an MNIST-sized ring) in gray, axes off, as the tutorials show digits.
import os
import numpy as np
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt

out = os.environ.get('PLOT_OUT', '/tmp')
i = np.arange(28).reshape(28, 1) * 1.0
j = np.arange(28).reshape(1, 28) * 1.0
r = np.sqrt((i - 13.5) ** 2 + (j - 11.0) ** 2)
img = np.exp(-((r - 8.0) ** 2) / 6.0) + 0.5 * (i > 20) * (j < 8)
fig, axes = plt.subplots(1, 2, figsize=(6, 3))
axes[0].imshow(img, cmap='gray')
axes[0].axis('off')
axes[0].set_title('gray')
axes[1].imshow(img, cmap='gray', vmin=0, vmax=2, interpolation='nearest', origin='lower')
axes[1].set_title('vmax=2, lower')
plt.savefig(os.path.join(out, 'imshow_gray.png'), dpi=80)
