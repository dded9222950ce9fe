python train.py \
--dataset_path /home/yifanc3/Github/segmentation_train/dataset/cityscapes_256/ \
--ckpt_path /home/yifanc3/models/rf_checkpoints/cityscapes_unet_softmax_AdamRd_100e/ \
--results_path /home/yifanc3/models/rf_results/cityscapes_unet_softmax_AdamRd_100e/ \
--epochs 100
