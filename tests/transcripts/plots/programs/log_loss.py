# Training curves on a log y axis with a legend, as d2l's plot shows them.
import os
import numpy as np
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt

out = os.environ.get('PLOT_OUT', '/tmp')
epochs = np.arange(1, 31)
train = 2.0 * np.exp(-epochs / 6.0) + 0.02
test = 2.2 * np.exp(-epochs / 8.0) + 0.08
plt.figure(figsize=(5, 3.5))
plt.plot(epochs, train, label='train loss')
plt.plot(epochs, test, 'm--', label='test loss')
plt.yscale('log')
plt.xlabel('epoch')
plt.ylabel('loss')
plt.xlim(1, 30)
plt.legend(loc='upper right')
plt.grid(True)
plt.savefig(os.path.join(out, 'log_loss.png'), dpi=80, bbox_inches='tight')
